//! One SSH session channel: waits for its request (exec or shell, with or without a PTY),
//! runs the shell, streams stdout and stderr back, then sends `exit-status`, EOF and close.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use forkbox_commands::{Input, Output, PullSource, TermSize, pipe};
use russh::server::Msg;
use russh::{Channel, ChannelMsg, ChannelWriteHalf, Sig};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::{Activity, MAX_CLIENT_ENV, MAX_CLIENT_ENV_VALUE, Session, client_may_set};
use crate::shell::{
    Completeness, MAX_SCRIPT, PendingInput, Shell, ShellConfig, Stdio, command_too_long,
    line_too_long,
};
use crate::terminal::{self, LineDiscipline, TermEvent, onlcr};

/// Terminal events queued between the key reader and the shell; a client that types
/// (or pastes) faster than that waits, like a full terminal buffer.
const TERM_EVENT_QUEUE: usize = 256;
/// Ctrl-C presses not yet acted on; more in a burst are one interrupt anyway.
const INTERRUPT_QUEUE: usize = 4;
/// Longest exec request accepted.
pub const MAX_EXEC_LEN: usize = 1024 * 1024;

type Writer = Arc<ChannelWriteHalf<Msg>>;

/// Where a session's fork stands. The connection task makes it after authentication,
/// outside russh's loop, so a channel may open before it exists and waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkState {
    Pending,
    Ready,
    /// Not made, or the session is ending: channels run nothing (a disconnect that says
    /// why follows).
    Failed,
}

#[derive(Clone, Debug)]
struct Pty {
    term: String,
    size: TermSize,
}

enum Request {
    Exec(Vec<u8>),
    Shell,
}

fn clamp_size(cols: u32, rows: u32) -> TermSize {
    TermSize {
        cols: cols.clamp(1, u16::MAX as u32) as u16,
        rows: rows.clamp(1, u16::MAX as u32) as u16,
    }
}

/// Serves one channel until it closes, once the session's fork exists (`fork`).
pub async fn run(
    session: Arc<Session>,
    channel: Channel<Msg>,
    mut fork: watch::Receiver<ForkState>,
) {
    let (mut rx, tx) = channel.split();
    let tx: Writer = Arc::new(tx);
    let mut pty: Option<Pty> = None;
    let mut client_env: Vec<(String, String)> = Vec::new();
    let request = loop {
        match rx.wait().await {
            Some(ChannelMsg::SetEnv {
                variable_name,
                variable_value,
                ..
            }) => {
                if client_may_set(&variable_name)
                    && variable_value.len() <= MAX_CLIENT_ENV_VALUE
                    && client_env.len() < MAX_CLIENT_ENV
                {
                    client_env.retain(|(k, _)| *k != variable_name);
                    client_env.push((variable_name, variable_value));
                }
            }
            Some(ChannelMsg::RequestPty {
                term,
                col_width,
                row_height,
                ..
            }) => {
                pty = Some(Pty {
                    term,
                    size: clamp_size(col_width, row_height),
                });
            }
            Some(ChannelMsg::Exec { command, .. }) => break Request::Exec(command),
            Some(ChannelMsg::RequestShell { .. }) => break Request::Shell,
            Some(ChannelMsg::RequestSubsystem { .. }) => {
                let _ = tx.close().await;
                return;
            }
            Some(ChannelMsg::Close) | None => return,
            Some(_) => {}
        }
    };
    let made = tokio::select! {
        state = fork.wait_for(|s| *s != ForkState::Pending) => {
            state.is_ok_and(|s| *s == ForkState::Ready)
        }
        _ = session.cancel.cancelled() => false,
    };
    // Without a fork the connection is being closed, and its disconnect says why.
    let Some(vfs) = session.vfs().filter(|_| made) else {
        return;
    };
    let interactive = matches!(request, Request::Shell) && pty.is_some();
    let mut shell = Shell::new(ShellConfig {
        fs: Arc::new(crate::vfs::mounts::Mounts::with_system(
            Arc::new(vfs),
            &session.services().system_mounts,
        )),
        registry: session.services().registry.clone(),
        env: with_client_env(
            session.environment(pty.as_ref().map(|p| p.term.as_str())),
            client_env,
        ),
        cwd: "/".into(),
        interactive,
        budget: session.budget.clone(),
    });
    shell.set_snapshots(session.snapshot_control());

    // stdout (and stderr on a terminal, which merges them) go through a pump that
    // respects the channel's flow control; stderr goes out as extended data otherwise.
    let (out_w, out_r) = pipe();
    let out_pump = tokio::spawn(pump(out_r, tx.clone(), false, pty.is_some()));
    let (err_w, err_pump) = if pty.is_some() {
        (out_w.clone(), None)
    } else {
        let (w, r) = pipe();
        (w, Some(tokio::spawn(pump(r, tx.clone(), true, false))))
    };

    let status = match pty {
        Some(pty) => {
            let size = Arc::new(Mutex::new(pty.size));
            let (line_tx, line_rx) = mpsc::channel(TERM_EVENT_QUEUE);
            let (int_tx, int_rx) = mpsc::channel(INTERRUPT_QUEUE);
            let keys = tokio::spawn(read_keys(
                rx,
                tx.clone(),
                line_tx,
                int_tx,
                size.clone(),
                session.activity.clone(),
            ));
            let mut term = Terminal {
                shell: &mut shell,
                lines: Arc::new(tokio::sync::Mutex::new(line_rx)),
                interrupts: int_rx,
                out: out_w.clone(),
                size,
                cancel: session.cancel.clone(),
                activity: session.activity.clone(),
            };
            let status = match request {
                Request::Exec(cmd) => match exec_script(&cmd) {
                    Ok(script) => term.foreground(&script).await,
                    Err(msg) => {
                        let _ = out_w.write_str(&msg).await;
                        2
                    }
                },
                Request::Shell => term.interactive(&motd(&session)).await,
            };
            keys.abort();
            status
        }
        None => {
            let cancel = session.cancel.child_token();
            let (in_w, in_r) = pipe();
            let stdin_pump = tokio::spawn(read_stdin(
                rx,
                in_w,
                cancel.clone(),
                session.activity.clone(),
            ));
            let stdio = Stdio {
                stdin: in_r,
                stdout: out_w.clone(),
                stderr: err_w.clone(),
                tty: None,
            };
            // Without a terminal the channel counts as busy until it ends: a script
            // piped in may wait long on a command or on its input.
            let busy = session.activity.busy();
            let status = match request {
                Request::Exec(cmd) => run_exec(&mut shell, &cmd, &stdio, cancel).await,
                Request::Shell => shell.run_stream(&stdio, cancel).await,
            };
            drop(busy);
            stdin_pump.abort();
            status
        }
    };
    drop(shell);
    drop(out_w);
    drop(err_w);
    let _ = out_pump.await;
    if let Some(p) = err_pump {
        let _ = p.await;
    }
    tracing::info!(status, "channel finished");
    finish(&tx, status).await;
}

/// The session's environment with what the client set through `env` requests in place
/// of forkbox's values (`LANG`, `TERM`) or after them.
fn with_client_env(
    mut env: Vec<(String, String)>,
    client: Vec<(String, String)>,
) -> Vec<(String, String)> {
    for (name, value) in client {
        match env.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = value,
            None => env.push((name, value)),
        }
    }
    env
}

/// Runs an exec request without a terminal: the request's bytes as a script, or, when
/// they cannot be one (over [`MAX_EXEC_LEN`] bytes, or not UTF-8), a message on stderr
/// and status 2. Public so the fuzz harness drives the same path as a channel.
#[doc(hidden)]
pub async fn run_exec(
    shell: &mut Shell,
    command: &[u8],
    stdio: &Stdio,
    cancel: CancellationToken,
) -> i32 {
    match exec_script(command) {
        Ok(script) => shell.run_script(&script, stdio, cancel).await,
        Err(msg) => {
            let _ = stdio.stderr.write_str(&msg).await;
            2
        }
    }
}

/// The script an exec request's bytes ask for, or the message (ending in a newline) that
/// refuses them: over [`MAX_EXEC_LEN`] bytes, or not UTF-8.
fn exec_script(command: &[u8]) -> Result<String, String> {
    if command.len() > MAX_EXEC_LEN {
        return Err(format!(
            "forkbox: command longer than {MAX_EXEC_LEN} bytes\n"
        ));
    }
    String::from_utf8(command.to_vec())
        .map_err(|_| "forkbox: the command is not valid UTF-8\n".to_string())
}

fn motd(session: &Session) -> String {
    format!(
        "Welcome to forkbox.\n\
         This session ({id}) has its own copy-on-write filesystem; it is deleted when you log out.\n\
         Type 'help' for the commands.\n\n",
        id = session.id
    )
}

async fn finish(tx: &Writer, status: i32) {
    let _ = tx.exit_status((status & 0xff) as u32).await;
    let _ = tx.eof().await;
    let _ = tx.close().await;
}

/// Copies a pipe to the channel until every writer is gone.
async fn pump(input: Input, tx: Writer, stderr: bool, terminal: bool) {
    while let Ok(Some(chunk)) = input.read_chunk().await {
        let chunk = if terminal {
            Bytes::from(onlcr(&chunk))
        } else {
            chunk
        };
        let sent = if stderr {
            tx.extended_data_bytes(1, chunk).await
        } else {
            tx.data_bytes(chunk).await
        };
        if sent.is_err() {
            // The client is gone: keep draining so writers never block on a dead channel.
            while let Ok(Some(_)) = input.read_chunk().await {}
            return;
        }
    }
}

/// Feeds channel data to a command's stdin (no terminal): EOF ends it, a signal or the
/// channel closing cancels the command.
async fn read_stdin(
    mut rx: russh::ChannelReadHalf,
    stdin: Output,
    cancel: CancellationToken,
    activity: Arc<Activity>,
) {
    let mut stdin = Some(stdin);
    while let Some(msg) = rx.wait().await {
        activity.touch();
        match msg {
            ChannelMsg::Data { data } => {
                if let Some(w) = &stdin
                    && w.write_bytes(data).await.is_err()
                {
                    stdin = None;
                }
            }
            ChannelMsg::Eof => stdin = None,
            ChannelMsg::Signal { signal } if interrupts_on(&signal) => cancel.cancel(),
            ChannelMsg::Close => break,
            _ => {}
        }
    }
    cancel.cancel();
}

fn interrupts_on(sig: &Sig) -> bool {
    matches!(sig, Sig::INT | Sig::TERM | Sig::KILL | Sig::HUP | Sig::QUIT)
}

/// Reads keystrokes, echoes them and turns them into lines (and end-of-input) on one
/// queue and Ctrl-C presses on another, so an interrupt is seen even while typed-ahead
/// lines wait for a reader.
async fn read_keys(
    mut rx: russh::ChannelReadHalf,
    tx: Writer,
    lines: mpsc::Sender<TermEvent>,
    interrupts: mpsc::Sender<()>,
    size: Arc<Mutex<TermSize>>,
    activity: Arc<Activity>,
) {
    let mut ld = LineDiscipline::default();
    while let Some(msg) = rx.wait().await {
        activity.touch();
        let evs = match msg {
            ChannelMsg::Data { data } => {
                let (evs, echo) = ld.feed(&data);
                if !echo.is_empty() {
                    let _ = tx.data_bytes(Bytes::from(echo)).await;
                }
                evs
            }
            ChannelMsg::WindowChange {
                col_width,
                row_height,
                ..
            } => {
                *size.lock().unwrap_or_else(|p| p.into_inner()) = clamp_size(col_width, row_height);
                continue;
            }
            ChannelMsg::Signal { signal } if interrupts_on(&signal) => vec![TermEvent::Interrupt],
            ChannelMsg::Eof => vec![TermEvent::Eof],
            ChannelMsg::Close => break,
            _ => continue,
        };
        for ev in evs {
            if ev == TermEvent::Interrupt {
                let _ = interrupts.try_send(());
            } else if lines.send(ev).await.is_err() {
                return;
            }
        }
    }
}

/// A foreground command's stdin on a terminal: takes a typed line only when the command
/// reads, so lines typed ahead stay for the shell.
struct TermSource {
    lines: Arc<tokio::sync::Mutex<mpsc::Receiver<TermEvent>>>,
}

#[async_trait::async_trait]
impl PullSource for TermSource {
    async fn next(&mut self) -> Option<Bytes> {
        match self.lines.lock().await.recv().await {
            Some(TermEvent::Line(line) | TermEvent::TooLong(line)) => Some(Bytes::from(line)),
            Some(TermEvent::Eof | TermEvent::Interrupt) | None => None,
        }
    }
}

/// The interactive side of a PTY channel.
struct Terminal<'a> {
    shell: &'a mut Shell,
    lines: Arc<tokio::sync::Mutex<mpsc::Receiver<TermEvent>>>,
    interrupts: mpsc::Receiver<()>,
    out: Output,
    size: Arc<Mutex<TermSize>>,
    cancel: CancellationToken,
    /// A command running in the foreground keeps the session from being idle.
    activity: Arc<Activity>,
}

impl Terminal<'_> {
    async fn say(&self, s: &str) {
        let _ = self.out.write_str(s).await;
    }

    /// Prompt, read a command (over several lines if incomplete), run it; until `exit`,
    /// Ctrl-D or the client leaving.
    async fn interactive(&mut self, motd: &str) -> i32 {
        self.say(motd).await;
        let mut script = PendingInput::default();
        loop {
            if let Some(status) = self.shell.exit_requested() {
                return status;
            }
            let prompt = if script.is_empty() {
                self.shell.prompt()
            } else {
                "> ".to_string()
            };
            self.say(&prompt).await;
            let lines = self.lines.clone();
            let event = tokio::select! {
                ev = async move { lines.lock().await.recv().await } => ev,
                Some(()) = self.interrupts.recv() => Some(TermEvent::Interrupt),
            };
            match event {
                None => return self.shell.last_status(),
                Some(TermEvent::Eof) => {
                    if script.is_empty() {
                        self.say("logout\n").await;
                        return self.shell.last_status();
                    }
                    script.take();
                }
                Some(TermEvent::Interrupt) => {
                    script.take();
                }
                Some(TermEvent::TooLong(_)) => {
                    script.take();
                    self.refuse(line_too_long(terminal::MAX_LINE)).await;
                }
                Some(TermEvent::Line(line)) => {
                    if (script.len() + line.len()) as u64 > MAX_SCRIPT {
                        script.take();
                        self.refuse(command_too_long()).await;
                        continue;
                    }
                    script.push(&String::from_utf8_lossy(&line));
                    let state;
                    (script, state) = script.completeness_async().await;
                    if state == Completeness::Incomplete {
                        continue;
                    }
                    let text = script.take();
                    if !text.trim().is_empty() {
                        self.foreground(&text).await;
                    }
                }
            }
        }
    }

    /// Drops typed input that cannot be a command: says why, and the prompt comes back.
    async fn refuse(&mut self, e: crate::shell::ShellError) {
        self.say(&e.message()).await;
        self.shell.last_status = e.status();
    }

    /// Runs one script with the terminal as its stdin: a line goes to it when it reads,
    /// Ctrl-D ends its input, Ctrl-C cancels it.
    async fn foreground(&mut self, script: &str) -> i32 {
        let _busy = self.activity.busy();
        let cancel = self.cancel.child_token();
        let stdin = Input::from_source(Box::new(TermSource {
            lines: self.lines.clone(),
        }));
        let size = *self.size.lock().unwrap_or_else(|p| p.into_inner());
        let stdio = Stdio {
            stdin,
            stdout: self.out.clone(),
            stderr: self.out.clone(),
            tty: Some(size),
        };
        let mut keys_open = true;
        let run = self.shell.run_script(script, &stdio, cancel.clone());
        tokio::pin!(run);
        loop {
            tokio::select! {
                status = &mut run => return status,
                pressed = self.interrupts.recv(), if keys_open => {
                    if pressed.is_none() {
                        keys_open = false;
                    }
                    cancel.cancel();
                }
            }
        }
    }
}
