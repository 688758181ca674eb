//! Running traps: EXIT when a (sub)shell ends, ERR after a failing command, DEBUG before
//! a simple command, RETURN after a function, and signal traps between two commands for
//! the signals `kill` queued (see [`super::jobs`]). `$?` is the same after a handler as
//! before it. The table itself is changed by the `trap` builtin.

use super::exec::{Exec, Flow};
use super::jobs::{TRAP_DEBUG, TRAP_ERR, TRAP_RETURN};
use super::redirect::Fds;
use super::{Shell, parse_program};

impl Shell {
    /// Tells `kill` which signals this shell handles itself (trapped or ignored).
    pub(crate) fn sync_caught(&self) {
        let set = self
            .traps
            .keys()
            .copied()
            .filter(|n| (1..=64).contains(n))
            .collect();
        *self.me.caught.lock().unwrap_or_else(|p| p.into_inner()) = set;
    }

    /// Runs the handler of condition `n`, if one is set and no handler is running; the
    /// handler's own status (0 when none ran).
    pub(crate) async fn run_trap(&mut self, n: i32, fds: &Fds) -> Exec<i32> {
        let Some(action) = self.traps.get(&n).cloned() else {
            return Ok(0);
        };
        if action.is_empty() || (self.in_trap > 0 && n != 0) {
            return Ok(0);
        }
        let program = match parse_program(&action) {
            Ok(p) => p,
            Err(e) => {
                self.report(&fds.stderr(), &e).await;
                return Ok(0);
            }
        };
        let saved = self.last_status;
        self.in_trap += 1;
        let outer = self.trap_saved.replace((n, saved));
        // A handler is read when it runs: a signal's or EXIT's from its own line 1, a
        // DEBUG or ERR handler's from the line of the command it runs for (as an `eval`
        // string there). The interrupted command keeps its line and read unit
        // (`shell::lines`).
        let saved_lines = (self.lines.unit, self.lines.lineno, self.lines.line_base);
        self.lines.line_base = if n == TRAP_DEBUG || n == TRAP_ERR {
            self.lines.lineno.saturating_sub(1)
        } else {
            0
        };
        let r = Box::pin(self.exec_program(&program, None, fds)).await;
        (self.lines.unit, self.lines.lineno, self.lines.line_base) = saved_lines;
        self.trap_saved = outer;
        self.in_trap -= 1;
        match r {
            Ok(status) => {
                self.last_status = saved;
                Ok(status)
            }
            Err(f) => Err(f),
        }
    }

    /// Handles the signals delivered since the last command: runs their traps, or ends
    /// the shell with 128+N for a signal it does not catch.
    pub(crate) async fn check_signals(&mut self, fds: &Fds) -> Exec<()> {
        if !self
            .me
            .has_pending
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Ok(());
        }
        for sig in self.me.take_pending() {
            match self.traps.get(&sig) {
                Some(_) => {
                    self.run_trap(sig, fds).await?;
                }
                None => {
                    *self.me.killed.lock().unwrap_or_else(|p| p.into_inner()) = Some(sig);
                    return Err(Flow::Exit(128 + sig));
                }
            }
        }
        Ok(())
    }

    /// Runs the EXIT trap once as the (sub)shell ends with `status`; the status it ends
    /// with (the handler's `exit N` changes it).
    pub(crate) async fn run_exit_trap(&mut self, status: i32, fds: &Fds) -> i32 {
        let status = self.run_exit_handler(status, fds).await;
        self.close_all_exec_files(fds).await;
        status
    }

    pub(crate) async fn run_exit_handler(&mut self, status: i32, fds: &Fds) -> i32 {
        if !self.traps.contains_key(&0) {
            return status;
        }
        self.last_status = status;
        let r = self.run_trap(0, fds).await;
        self.traps.remove(&0);
        match r {
            Err(Flow::Exit(s) | Flow::Abort(s) | Flow::Discard(s)) => s,
            _ => status,
        }
    }

    /// After a foreground subshell ended: bash's word for a signal that killed it.
    pub(crate) async fn report_killed(&self, sub: &Shell, fds: &Fds) {
        let sig = *sub.me.killed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sig) = sig.filter(|s| *s != 2 && *s != 13) {
            let msg = format!("{}\n", super::jobs::signal_description(sig));
            let _ = fds.stderr().write_str(&msg).await;
        }
    }

    /// `set -T`, or `shopt -s extdebug` which implies it: functions, subshells and
    /// command substitutions inherit the DEBUG and RETURN traps.
    pub(crate) fn functrace(&self) -> bool {
        self.opts.functrace || self.shopts.on("extdebug")
    }

    /// `set -E`, or `shopt -s extdebug` which implies it: they inherit the ERR trap.
    pub(crate) fn errtrace(&self) -> bool {
        self.opts.errtrace || self.shopts.on("extdebug")
    }

    /// The ERR trap after a command failed where `set -e` would act.
    pub(crate) async fn run_err_trap(&mut self, fds: &Fds) -> Exec<()> {
        if self.traps.contains_key(&TRAP_ERR) && (self.call_depth == 0 || self.errtrace()) {
            self.run_trap(TRAP_ERR, fds).await?;
        }
        Ok(())
    }

    /// The DEBUG trap before a simple command; true when the command is to be skipped
    /// (under `shopt -s extdebug`, a handler that fails skips it, and one that returns 2
    /// in a function or sourced file makes that return).
    pub(crate) async fn run_debug_trap(&mut self, fds: &Fds) -> Exec<bool> {
        if !(self.traps.contains_key(&TRAP_DEBUG)
            && (self.call_depth == 0 || self.functrace() || self.traced_call))
        {
            return Ok(false);
        }
        let status = self.run_trap(TRAP_DEBUG, fds).await?;
        if status == 0 || !self.shopts.on("extdebug") {
            return Ok(false);
        }
        if status == 2 && (self.call_depth > 0 || self.source_depth > 0) {
            return Err(Flow::Return(2));
        }
        Ok(true)
    }

    /// The DEBUG trap before a compound command's head (`for`'s each round, `case`),
    /// with `$BASH_COMMAND` set to `text`; true when `extdebug` skips it.
    pub(crate) async fn debug_trap_before(
        &mut self,
        text: impl FnOnce() -> String,
        fds: &Fds,
    ) -> Exec<bool> {
        if self.in_trap > 0 || self.traps.is_empty() || !self.traps.contains_key(&TRAP_DEBUG) {
            return Ok(false);
        }
        self.bash_command = text();
        self.run_debug_trap(fds).await
    }

    /// The DEBUG trap before the header of a `for` iteration, a `case`, a `select` or a
    /// part of an arithmetic `for`, which bash runs as before a simple command, with
    /// `BASH_COMMAND` the header as bash prints it (`text`).
    pub(crate) async fn debug_header(
        &mut self,
        text: impl FnOnce() -> String,
        fds: &Fds,
    ) -> Exec<()> {
        self.debug_trap_before(text, fds).await.map(|_skip| ())
    }

    /// The RETURN trap as a function returns.
    pub(crate) async fn run_return_trap(&mut self, fds: &Fds) -> Exec<()> {
        if self.traps.contains_key(&TRAP_RETURN) {
            self.run_trap(TRAP_RETURN, fds).await?;
        }
        Ok(())
    }
}
