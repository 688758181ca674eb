//! One SSH session channel: waits for its request (exec or shell, with or without a PTY),
//! runs the shell, streams stdout and stderr back, then sends `exit-status`, EOF and close.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use forkbox_commands::{Input, Output, TermSize, pipe};
use russh::server::Msg;
use russh::{Channel, ChannelMsg, ChannelWriteHalf, Sig};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;

use super::flow::{Backlog, Outbound, Past, STALL_PACE};
use super::{Activity, MAX_CLIENT_ENV, MAX_CLIENT_ENV_VALUE, Session, client_may_set};
use crate::audit::Origin;
use crate::shell::{
    Completeness, MAX_SCRIPT, PendingInput, Shell, ShellConfig, Stdio, TerminalHandle,
    command_too_long, line_too_long,
};
use crate::terminal::{
    self, Candidate, CompletionKind, CompletionRequest, Editor, Event, SessionTerminal, TermSource,
    Tty, onlcr,
};
/// Longest exec request accepted.
pub const MAX_EXEC_LEN: usize = 1024 * 1024;
/// Stdin data received but not yet taken by the command, in KiB, past which the channel
/// holds russh's loop back unless output waits on it (see `read_stdin`).
const STDIN_QUEUE_KIB: usize = 8 * 1024;

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
    /// The `sftp` subsystem.
    Sftp,
}

/// The window size a client asked for; 0 (what `ssh -tt` sends when its own stdin is no
/// terminal) means unknown, taken as 80×24 as programs on a real tty do.
fn clamp_size(cols: u32, rows: u32) -> TermSize {
    let or = |v: u32, unknown: u32| {
        if v == 0 {
            unknown
        } else {
            v.min(u16::MAX as u32)
        }
    };
    TermSize {
        cols: or(cols, 80) as u16,
        rows: or(rows, 24) as u16,
    }
}

/// Serves one channel until it closes, once the session's fork exists (`fork`); `handle`
/// sends what the channel's own half cannot (`exit-signal`).
pub async fn run(
    session: Arc<Session>,
    channel: Channel<Msg>,
    mut fork: watch::Receiver<ForkState>,
    handle: russh::server::Handle,
) {
    let id = channel.id();
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
            Some(ChannelMsg::RequestSubsystem { name, .. }) if name == "sftp" => {
                break Request::Sftp;
            }
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
    let fs: Arc<dyn forkbox_commands::fs::FileSystem> = Arc::new(
        crate::vfs::mounts::Mounts::with_system(Arc::new(vfs), &session.services().system_mounts),
    );
    if matches!(request, Request::Sftp) {
        tracing::info!("sftp subsystem started");
        // Each request counts as activity: an SFTP client left idle times out like a shell.
        let cancel = session.commands.clone();
        crate::ssh::sftp::serve(
            fs,
            session.budget.clone(),
            rx,
            &tx,
            cancel,
            session.activity.clone(),
            &session.outbound,
        )
        .await;
        tracing::info!("sftp subsystem finished");
        match session.ending() {
            Some(end) => {
                let out = &session.outbound;
                killed(&tx, &handle, out, id, end.signal, &end.message).await
            }
            None => finish(&tx, &session.outbound, 0).await,
        }
        return;
    }
    let interactive = matches!(request, Request::Shell) && pty.is_some();
    let mut shell = Shell::new(ShellConfig {
        fs,
        registry: session.services().registry.clone(),
        env: with_client_env(
            session.environment(pty.as_ref().map(|p| p.term.as_str())),
            client_env,
        ),
        cwd: "/".into(),
        interactive,
        budget: session.budget.clone(),
    });
    if matches!(request, Request::Shell) {
        // sshd starts the login shell for a session with no command, terminal or not:
        // `$0` is `-bash` and messages start with it (`ssh -T host < script`).
        shell.set_args(&format!("-{}", crate::shell::error::PROGRAM), Vec::new());
    }
    shell.set_snapshots(session.snapshot_control());
    shell.set_command_log(Arc::new(ScriptLog(session.clone())));

    // stdout (and stderr on a terminal, which merges them) go through a pump that
    // respects the channel's flow control; stderr goes out as extended data otherwise.
    // The pumps run in this task beside the shell (joined, not spawned): a chunk the
    // shell writes reaches russh without waking another thread, so a short command's
    // output and its exit status follow each other at once.
    let (out_w, out_r) = pipe();
    let outbound = session.outbound.clone();
    let out_pump = pump(out_r, tx.clone(), outbound.clone(), false, pty.is_some());
    let (err_w, err_pump) = if pty.is_some() {
        (out_w.clone(), None)
    } else {
        let (w, r) = pipe();
        (w, Some(pump(r, tx.clone(), outbound.clone(), true, false)))
    };
    let err_pump = async move {
        if let Some(p) = err_pump {
            p.await;
        }
    };

    // The signal a `signal` request delivered, if one stopped the command (no terminal).
    let signalled: Arc<Mutex<Option<Sig>>> = Arc::new(Mutex::new(None));
    let body = {
        let session = session.clone();
        let signalled = signalled.clone();
        let outbound = outbound.clone();
        async move {
            let status = match pty {
                Some(pty) => {
                    let tty = Tty::new(pty.size);
                    let notice = tokio::spawn(drain_notice(session.clone(), out_w.clone()));
                    let keys = tokio::spawn(read_keys(
                        rx,
                        tty.clone(),
                        session.activity.clone(),
                        outbound.clone(),
                        session.budget.clone(),
                    ));
                    let mut term = Terminal {
                        shell: &mut shell,
                        editor: Editor::new(pty.size.cols),
                        tty,
                        seen: 0,
                        resizes: 0,
                        out: out_w.clone(),
                        cancel: session.commands.clone(),
                        activity: session.activity.clone(),
                        session: session.clone(),
                        timed_out: false,
                    };
                    let exec = matches!(request, Request::Exec(_));
                    let status = match request {
                        Request::Exec(cmd) => match exec_script(&cmd) {
                            Ok(script) => term.foreground(&script, Origin::Exec).await,
                            Err(msg) => {
                                let _ = out_w.write_str(&msg).await;
                                2
                            }
                        },
                        Request::Shell => term.interactive(&motd(&session)).await,
                        Request::Sftp => 0, // served above
                    };
                    keys.abort();
                    notice.abort();
                    let _ = notice.await;
                    // A line typed at a terminal that timed out ends only that line.
                    (status, exec && term.timed_out)
                }
                None => {
                    let cancel = session.commands.child_token();
                    let (in_w, in_r) = pipe();
                    let stdin_pump = tokio::spawn(read_stdin(
                        rx,
                        in_w,
                        cancel.clone(),
                        session.activity.clone(),
                        signalled.clone(),
                        outbound.clone(),
                        session.budget.clone(),
                    ));
                    let stdio = Stdio {
                        stdin: in_r,
                        stdout: out_w.clone(),
                        stderr: err_w.clone(),
                        tty: None,
                        terminal: None,
                    };
                    // Without a terminal the channel counts as busy until it ends: a script
                    // piped in may wait long on a command or on its input.
                    let busy = session.activity.busy();
                    let limit = session.services().command_timeout;
                    let status = match request {
                        Request::Exec(cmd) => {
                            let (started, clock) = (SystemTime::now(), Instant::now());
                            let run = run_exec(&mut shell, &cmd, &stdio, cancel.clone());
                            let ended = limited(run, limit, &cancel, &stdio.stderr).await;
                            let text = String::from_utf8_lossy(&cmd);
                            session
                                .audit(Origin::Exec, &text, started, clock.elapsed(), ended.0)
                                .await;
                            ended
                        }
                        Request::Shell => {
                            let run = shell.run_stream(&stdio, cancel.clone());
                            limited(run, limit, &cancel, &stdio.stderr).await
                        }
                        Request::Sftp => (0, false), // served above
                    };
                    drop(busy);
                    stdin_pump.abort();
                    status
                }
            };
            if let Some(end) = session.ending() {
                // A limit of the whole session stopped the channel: its line goes to the
                // client's stderr (or terminal) too, as OpenSSH's client shows no
                // exit-signal message and may leave on the channel's close before the
                // disconnect's message arrives.
                let _ = err_w.write_str(&format!("{}\n", end.message)).await;
            }
            // A line typed at a terminal that a limit abandoned ends only that line.
            let limit_abort = shell
                .limit_abort()
                .filter(|_| !interactive)
                .map(str::to_string);
            // The pumps end once every writer is gone.
            drop(shell);
            drop(out_w);
            drop(err_w);
            (status, limit_abort)
        }
    };
    let (((status, timed_out), limit_abort), (), ()) = tokio::join!(body, out_pump, err_pump);
    let signal = signalled
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .filter(|_| status >= 128);
    // As sshd reports a command that a signal killed: `exit-signal` in place of a
    // status (asyncssh shows it as `exit_signal`; OpenSSH's client exits 255). A limit
    // that stopped the command is reported the same way, with the line that says which.
    let stopped = match (signal, session.ending()) {
        (Some(sig), _) => Some((sig, String::new())),
        (None, Some(end)) => Some((end.signal, end.message)),
        (None, None) if timed_out => Some((Sig::TERM, timed_out_message(limit_of(&session)))),
        (None, None) => limit_abort.map(|why| (Sig::KILL, format!("forkbox: {why}"))),
    };
    match stopped {
        Some((sig, message)) => {
            tracing::info!(status, signal = ?sig, %message, "channel finished by a signal");
            killed(&tx, &handle, &outbound, id, sig, &message).await;
        }
        None => {
            tracing::info!(status, "channel finished");
            finish(&tx, &outbound, status).await;
        }
    }
}

/// The `--command-timeout` of the session's server (zero if there is none).
fn limit_of(session: &Session) -> Duration {
    session.services().command_timeout.unwrap_or_default()
}

/// Ends a channel whose command a signal or a limit stopped: `exit-signal` (with
/// `message`, one line without its newline) in place of `exit-status`, then EOF and close.
async fn killed(
    tx: &Writer,
    handle: &russh::server::Handle,
    out: &Outbound,
    id: russh::ChannelId,
    sig: Sig,
    message: &str,
) {
    let why = message.to_string();
    let _ = out
        .send(handle.exit_signal_request(id, sig, false, why, "en".into()))
        .await;
    let _ = out.send(tx.eof()).await;
    let _ = out.send(tx.close()).await;
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
/// refuses them: over [`MAX_EXEC_LEN`] bytes, not UTF-8, or the legacy scp protocol.
fn exec_script(command: &[u8]) -> Result<String, String> {
    if command.len() > MAX_EXEC_LEN {
        return Err(format!(
            "forkbox: command longer than {MAX_EXEC_LEN} bytes\n"
        ));
    }
    let script = String::from_utf8(command.to_vec())
        .map_err(|_| "forkbox: the command is not valid UTF-8\n".to_string())?;
    if legacy_scp(&script) {
        return Err(LEGACY_SCP.to_string());
    }
    Ok(script)
}

/// What `scp -O` (the legacy protocol, which runs `scp -t`/`scp -f` on the server) is told.
pub const LEGACY_SCP: &str = "forkbox: the legacy scp protocol (scp -O) is not supported; \
                              use scp without -O (SFTP) or sftp\n";

/// True for the command OpenSSH's `scp -O` runs on the server: `scp` with `-t` (sink) or
/// `-f` (source) among its options, such as `scp -r -d -t -- dir`.
fn legacy_scp(script: &str) -> bool {
    let mut words = script.split_ascii_whitespace();
    words.next() == Some("scp")
        && words
            .take_while(|w| *w != "--")
            .any(|w| w == "-t" || w == "-f")
}

fn motd(session: &Session) -> String {
    let first = &session.services().motd;
    let first = if first.is_empty() {
        String::new()
    } else {
        format!("{first}\n")
    };
    // How to keep work, where the server lets sessions take snapshots.
    let keep = if session.services().snapshots.policy.enabled {
        "To keep your work, run 'snapshot': it prints a version V; log in again as user \
         snap-V to start from it.\n"
    } else {
        ""
    };
    format!(
        "{first}\
         This session ({id}) has its own copy-on-write filesystem; it is deleted when you log out.\n\
         {keep}\
         Try: ls -l; echo hi > note.txt; nano note.txt; seq 100 | less. Type 'help' for the commands.\n\n",
        id = session.id()
    )
}

/// Status of a command stopped by `--command-timeout`, as timeout(1) gives.
const STATUS_TIMED_OUT: i32 = 124;

/// Runs `run` for at most `limit`: past it `cancel` fires, the command is let stop, and
/// the status is [`STATUS_TIMED_OUT`] with a line on `stderr` that says why. The status,
/// and whether the limit stopped the command.
async fn limited(
    run: impl std::future::Future<Output = i32>,
    limit: Option<Duration>,
    cancel: &CancellationToken,
    stderr: &Output,
) -> (i32, bool) {
    let Some(limit) = limit else {
        return (run.await, false);
    };
    tokio::pin!(run);
    tokio::select! {
        status = &mut run => (status, false),
        _ = tokio::time::sleep(limit) => {
            cancel.cancel();
            let _ = run.await;
            (timed_out(limit, stderr).await, true)
        }
    }
}

/// The line that says a command ran past `--command-timeout` of `limit`.
fn timed_out_message(limit: Duration) -> String {
    format!(
        "forkbox: command timed out after {}",
        crate::server::human(limit)
    )
}

/// Says that a command ran past `--command-timeout`; its status.
async fn timed_out(limit: Duration, out: &Output) -> i32 {
    crate::telemetry::metrics::limit_hit(crate::telemetry::metrics::Limit::CommandTimeout);
    tracing::info!(?limit, "command timed out");
    let _ = out
        .write_str(&format!("{}\n", timed_out_message(limit)))
        .await;
    STATUS_TIMED_OUT
}

/// Tells an interactive session, in one line, that the server is going away, once it
/// begins to drain.
async fn drain_notice(session: Arc<Session>, out: Output) {
    let services = session.services();
    services.drain.cancelled().await;
    let _ = out
        .write_str(&format!(
            "\nforkbox: this server is shutting down; this session will be closed within {}\n",
            crate::server::human(services.drain_grace)
        ))
        .await;
}

/// The audit trail of a script piped to a shell without a terminal: one record per
/// complete command.
struct ScriptLog(Arc<Session>);

#[async_trait::async_trait]
impl crate::shell::CommandLog for ScriptLog {
    async fn ran(&self, command: &str, started: SystemTime, duration: Duration, status: i32) {
        self.0
            .audit(Origin::Script, command, started, duration, status)
            .await;
    }
}

async fn finish(tx: &Writer, out: &Outbound, status: i32) {
    let _ = out.send(tx.exit_status((status & 0xff) as u32)).await;
    let _ = out.send(tx.eof()).await;
    let _ = out.send(tx.close()).await;
}

/// Copies a pipe to the channel until every writer is gone; a send that must wait (for
/// window, or for russh's loop) is counted in `out`, so stdin readers let the loop run.
async fn pump(input: Input, tx: Writer, out: Arc<Outbound>, stderr: bool, terminal: bool) {
    while let Ok(Some(chunk)) = input.read_chunk().await {
        crate::telemetry::metrics::bytes_sent(chunk.len());
        let chunk = if terminal {
            Bytes::from(onlcr(&chunk))
        } else {
            chunk
        };
        let sent = if stderr {
            out.send(tx.extended_data_bytes(1, chunk)).await
        } else {
            out.send(tx.data_bytes(chunk)).await
        };
        if sent.is_err() {
            // The client is gone: keep draining so writers never block on a dead channel.
            while let Ok(Some(_)) = input.read_chunk().await {}
            return;
        }
    }
}

/// What one chunk of queued stdin holds until the command's pipe took it: room in the
/// queue, or (past the queue) session memory and its place in the channel's count of
/// input past the queue. Dropping it gives that back.
struct Held {
    _room: Option<OwnedSemaphorePermit>,
    _memory: Option<(forkbox_commands::Charge, Past)>,
}

impl Held {
    fn room(permit: Result<OwnedSemaphorePermit, tokio::sync::AcquireError>) -> Held {
        // The semaphore is never closed; were it, the chunk would hold nothing.
        Held {
            _room: permit.ok(),
            _memory: None,
        }
    }
}

/// Feeds channel data to a command's stdin (no terminal): EOF ends it, a signal or the
/// channel closing cancels the command.
///
/// Data goes through a queue of its own, written to the pipe by another task, so russh's
/// loop (which waits for this reader to take each message, see [`super::flow`]) is not
/// held back by a command that is slow to read; past [`STDIN_QUEUE_KIB`] queued — a
/// command that is not reading its input — data goes to the session's memory while the
/// client's window shrinks (see [`hold`]).
async fn read_stdin(
    mut rx: russh::ChannelReadHalf,
    stdin: Output,
    cancel: CancellationToken,
    activity: Arc<Activity>,
    signalled: Arc<Mutex<Option<Sig>>>,
    outbound: Arc<Outbound>,
    budget: forkbox_commands::Budget,
) {
    let room = Arc::new(Semaphore::new(STDIN_QUEUE_KIB));
    let backlog = Arc::new(Backlog::new(outbound.clone()));
    let (queue, mut queued) = tokio::sync::mpsc::unbounded_channel::<(Bytes, Held)>();
    let writer = {
        let (room, backlog) = (room.clone(), backlog.clone());
        tokio::spawn(async move {
            let mut stdin = Some(stdin);
            while let Some((data, held)) = queued.recv().await {
                if let Some(w) = &stdin
                    && w.write_bytes(data).await.is_err()
                {
                    stdin = None;
                }
                drop(held);
                // Full until the command took half of it.
                if queued.is_empty() || room.available_permits() >= STDIN_QUEUE_KIB / 2 {
                    backlog.set(false);
                }
            }
        })
    };
    let mut queue = Some(queue);
    while let Some(msg) = rx.wait().await {
        activity.touch();
        match msg {
            ChannelMsg::Data { data } => {
                crate::telemetry::metrics::bytes_received(data.len());
                let Some(q) = &queue else { continue };
                let held = hold(&room, &backlog, &outbound, &budget, data.len()).await;
                let _ = q.send((data, held));
            }
            // The writer ends the command's stdin once everything queued is written.
            ChannelMsg::Eof => queue = None,
            ChannelMsg::Signal { signal } if interrupts_on(&signal) => {
                signalled
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(signal);
                cancel.cancel();
            }
            ChannelMsg::Close => break,
            _ => {}
        }
    }
    drop(queue);
    cancel.cancel();
    writer.abort();
}

/// Room for `len` bytes of stdin: in the queue, else in session memory at once, counted
/// as the channel's input past its queue — up to [`super::flow::PAST_QUEUE`]; past that the
/// channel is stalled (its client's window shrinks, see [`super::flow`]) and each message
/// first waits up to [`STALL_PACE`] for room, or until a send of the connection waits on
/// russh's loop. Only when the session's memory is spent does it wait for the queue
/// whatever waits.
async fn hold(
    room: &Arc<Semaphore>,
    backlog: &Arc<Backlog>,
    outbound: &Outbound,
    budget: &forkbox_commands::Budget,
    len: usize,
) -> Held {
    let kib = u32::try_from(len.div_ceil(1024).clamp(1, STDIN_QUEUE_KIB)).unwrap_or(1);
    if let Ok(permit) = room.clone().try_acquire_many_owned(kib) {
        return Held::room(Ok(permit));
    }
    backlog.set(true);
    if backlog.stalled() {
        tokio::select! {
            permit = room.clone().acquire_many_owned(kib) => {
                return Held::room(permit);
            }
            () = outbound.until_waiting() => {}
            () = tokio::time::sleep(STALL_PACE) => {}
        }
    }
    match budget.charge(len) {
        Ok(charge) => Held {
            _room: None,
            _memory: Some((charge, backlog.take_past(len))),
        },
        Err(e) => {
            tracing::warn!(
                error = %e,
                "stdin past its queue, and the session's memory is spent: \
                 holding the connection back"
            );
            Held::room(room.clone().acquire_many_owned(kib).await)
        }
    }
}

fn interrupts_on(sig: &Sig) -> bool {
    matches!(sig, Sig::INT | Sig::TERM | Sig::KILL | Sig::HUP | Sig::QUIT)
}

/// Reads the channel of a PTY session: keystrokes into the terminal's input queue,
/// window changes, interrupts and end of input. Past a full queue it goes on as a stdin
/// reader does (see [`hold`]): a paste of megabytes while the session's output waits for
/// window — the editor echoing the paste, a command printing — must not wedge the
/// connection, nor may a command that reads nothing.
async fn read_keys(
    mut rx: russh::ChannelReadHalf,
    tty: Arc<Tty>,
    activity: Arc<Activity>,
    outbound: Arc<Outbound>,
    budget: forkbox_commands::Budget,
) {
    let backlog = Arc::new(Backlog::new(outbound.clone()));
    // Session memory held for what is queued past the terminal's queue.
    let mut past: Option<(forkbox_commands::Charge, Past)> = None;
    while let Some(msg) = rx.wait().await {
        activity.touch();
        match msg {
            ChannelMsg::Data { data } => {
                crate::telemetry::metrics::bytes_received(data.len());
                tty.typed(&data);
                tty_room(&tty, data.len(), &backlog, &outbound, &budget, &mut past).await;
            }
            ChannelMsg::WindowChange {
                col_width,
                row_height,
                ..
            } => tty.resized(clamp_size(col_width, row_height)),
            ChannelMsg::Signal { signal } if interrupts_on(&signal) => tty.interrupt(),
            ChannelMsg::Eof => tty.end_of_input(),
            ChannelMsg::Close => break,
            _ => {}
        }
    }
    tty.close();
}

/// Returns at once while the terminal's queue has room; past it, charges the `len` bytes
/// just queued to the session's memory (in `past`, counted as the channel's input past its
/// queue) and returns, after waiting up to [`STALL_PACE`] for room first once the channel
/// is stalled (see [`hold`]); only with the session's memory spent too does it wait for
/// room whatever waits. What `past` holds is given back once the queue has room.
async fn tty_room(
    tty: &Tty,
    len: usize,
    backlog: &Arc<Backlog>,
    outbound: &Outbound,
    budget: &forkbox_commands::Budget,
    past: &mut Option<(forkbox_commands::Charge, Past)>,
) {
    if !tty.has_room() {
        backlog.set(true);
        let room = backlog.stalled()
            && tokio::select! {
                () = tty.room() => true,
                () = outbound.until_waiting() => false,
                () = tokio::time::sleep(STALL_PACE) => false,
            };
        if !room {
            let charged = match past {
                Some((charge, counted)) => charge.grow(len).map(|()| counted.grow(len)),
                None => budget
                    .charge(len)
                    .map(|c| *past = Some((c, backlog.take_past(len)))),
            };
            match charged {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        "typed input past the terminal's queue, and the session's memory \
                         is spent: holding the connection back"
                    );
                    tty.room().await;
                }
            }
        }
    }
    *past = None;
    backlog.set(false);
}

/// The interactive side of a PTY channel.
struct Terminal<'a> {
    shell: &'a mut Shell,
    /// The typed input, shared with the channel's reader.
    tty: Arc<Tty>,
    /// The prompt's line editor (and the session's history).
    editor: Editor,
    /// Interrupts already acted on.
    seen: u64,
    /// Window changes already acted on.
    resizes: u64,
    out: Output,
    cancel: CancellationToken,
    /// A command running in the foreground keeps the session from being idle.
    activity: Arc<Activity>,
    /// The audit trail and the per-command time limit are the session's.
    session: Arc<Session>,
    /// Whether `--command-timeout` stopped the last command run in the foreground.
    timed_out: bool,
}

impl Terminal<'_> {
    async fn say(&self, s: &str) {
        let _ = self.out.write_str(s).await;
    }

    /// Writes (and empties) what the editor drew.
    async fn draw(&self, buf: &mut Vec<u8>) {
        if !buf.is_empty() {
            let _ = self.out.write_bytes(Bytes::from(std::mem::take(buf))).await;
        }
    }

    /// Prompt, read a command (over several lines if incomplete), run it; until `exit`,
    /// Ctrl-D or the client leaving.
    async fn interactive(&mut self, motd: &str) -> i32 {
        self.say(motd).await;
        self.shell.set_history(self.editor.history());
        let mut script = PendingInput::default();
        // The history entry of the command being read (its lines joined as bash's
        // cmdhist joins them).
        let mut entry = String::new();
        loop {
            if let Some(status) = self.shell.exit_requested() {
                return status;
            }
            self.shell.set_terminal_size(self.tty.size());
            let prompt = if script.is_empty() {
                self.shell.prompt()
            } else {
                "> ".to_string()
            };
            // A limit of the whole session (idle time, lifetime) ends the shell.
            let cancel = self.cancel.clone();
            let event = tokio::select! {
                ev = self.read_line(&prompt) => ev,
                _ = cancel.cancelled() => return self.shell.last_status(),
            };
            match event {
                Event::Eof => {
                    if script.is_empty() {
                        self.say("logout\n").await;
                        return self.shell.last_status();
                    }
                    script.take();
                    entry.clear();
                }
                Event::Interrupt | Event::Complete(_) => {
                    script.take();
                    entry.clear();
                }
                Event::TooLong(_) => {
                    script.take();
                    entry.clear();
                    self.refuse(line_too_long(terminal::MAX_LINE)).await;
                }
                Event::Line(line) => {
                    // `set -H`: `!!`, `^old^new`, …; the new line is shown, an error
                    // drops it (neither run nor remembered), `:p` only shows it.
                    // Not in a here-document's body, as bash.
                    let in_body = script.in_heredoc_body();
                    let expanded = if in_body {
                        None
                    } else {
                        self.shell.expand_history(&line)
                    };
                    let line = match expanded {
                        None => line,
                        Some(Err(msg)) => {
                            self.say(&msg).await;
                            continue;
                        }
                        Some(Ok(e)) => {
                            if e.changed {
                                self.say(&format!("{}\n", e.line)).await;
                            }
                            if e.print_only {
                                self.shell.remember(&e.line);
                                continue;
                            }
                            e.line
                        }
                    };
                    if in_body {
                        entry.push('\n');
                        entry.push_str(&line);
                    } else {
                        terminal::history_join(&mut entry, &line);
                    }
                    if (script.len() + line.len() + 1) as u64 > MAX_SCRIPT {
                        script.take();
                        entry.clear();
                        self.refuse(command_too_long()).await;
                        continue;
                    }
                    script.push(&line);
                    script.push("\n");
                    let state;
                    (script, state) = script.completeness_async().await;
                    if state == Completeness::Incomplete {
                        continue;
                    }
                    // Remembered before it runs, as bash does (`history` lists itself);
                    // a here-document's entry ends with the newline after its delimiter.
                    if in_body {
                        entry.push('\n');
                    }
                    self.shell.remember(&std::mem::take(&mut entry));
                    let text = script.take();
                    if !text.trim().is_empty() {
                        self.foreground(&text, Origin::Terminal).await;
                    }
                }
            }
        }
    }

    /// Reads one line with the editor after `prompt`: typed bytes it does not use stay
    /// queued for whoever reads next; Tab asks the shell for completions.
    async fn read_line(&mut self, prompt: &str) -> Event {
        let mut changed = self.tty.subscribe();
        let mut buf = Vec::new();
        self.editor.begin(prompt, &mut buf);
        self.draw(&mut buf).await;
        loop {
            changed.borrow_and_update();
            let taken = self.tty.take();
            if let Some(size) = taken.size
                && taken.resizes != self.resizes
            {
                self.resizes = taken.resizes;
                self.shell.set_terminal_size(size);
                self.editor.resize(size.cols, &mut buf);
            }
            if taken.interrupts != self.seen {
                self.seen = taken.interrupts;
                let event = self.editor.interrupt(&mut buf);
                self.tty.unread(&taken.bytes, taken.interrupts);
                self.draw(&mut buf).await;
                return event;
            }
            let mut rest = &taken.bytes[..];
            while !rest.is_empty() {
                let step = self.editor.feed(rest, &mut buf);
                rest = &rest[step.consumed..];
                match step.event {
                    None => {}
                    Some(Event::Complete(request)) => {
                        self.draw(&mut buf).await;
                        let found = self.candidates(&request).await;
                        self.editor.complete(found, &mut buf);
                    }
                    Some(event) => {
                        self.tty.unread(rest, taken.interrupts);
                        self.draw(&mut buf).await;
                        return event;
                    }
                }
            }
            self.draw(&mut buf).await;
            if taken.end || changed.changed().await.is_err() {
                return Event::Eof;
            }
        }
    }

    /// What Tab offers for `request`: command names, variables, or paths in the VFS.
    async fn candidates(&self, request: &CompletionRequest) -> Vec<Candidate> {
        let plain = |names: Vec<String>| {
            names
                .into_iter()
                .map(|name| Candidate { name, dir: false })
                .collect()
        };
        match request.kind {
            CompletionKind::Command => plain(self.shell.command_candidates(&request.word).await),
            CompletionKind::Variable => plain(self.shell.variable_candidates(&request.word).await),
            CompletionKind::Path => self
                .shell
                .path_candidates(&request.word)
                .await
                .into_iter()
                .map(|(name, dir)| Candidate { name, dir })
                .collect(),
        }
    }

    /// Drops typed input that cannot be a command: says why, and the prompt comes back.
    async fn refuse(&mut self, e: crate::shell::ShellError) {
        self.say(&e.message_with(&self.shell.message_prefix()))
            .await;
        self.shell.last_status = e.status();
    }

    /// Runs one script with the terminal as its stdin: a line goes to it when it reads,
    /// Ctrl-D ends its input, Ctrl-C cancels it, `--command-timeout` stops it; the audit
    /// trail records it as coming from `origin`.
    async fn foreground(&mut self, script: &str, origin: Origin) -> i32 {
        let (started, clock) = (SystemTime::now(), Instant::now());
        let limit = self.session.services().command_timeout;
        let (status, late) = self.run_foreground(script, limit).await;
        self.timed_out = late;
        let status = match (late, limit) {
            (true, Some(limit)) => timed_out(limit, &self.out).await,
            _ => status,
        };
        self.session
            .audit(origin, script, started, clock.elapsed(), status)
            .await;
        status
    }

    /// Runs `script` in the foreground; its status, and whether `limit` stopped it.
    async fn run_foreground(&mut self, script: &str, limit: Option<Duration>) -> (i32, bool) {
        let _busy = self.activity.busy();
        let cancel = self.cancel.child_token();
        let seen = self.seen;
        let stdin = Input::from_source(Box::new(TermSource::new(
            self.tty.clone(),
            self.out.clone(),
            seen,
        )));
        let stdio = Stdio {
            stdin,
            stdout: self.out.clone(),
            stderr: self.out.clone(),
            tty: Some(self.tty.size()),
            terminal: Some(TerminalHandle(Arc::new(SessionTerminal(self.tty.clone())))),
        };
        let mut changed = self.tty.subscribe();
        // Ctrl-C typed after the editor read the line but before this subscription
        // interrupts the command too: looked at once, not at the next key.
        changed.mark_changed();
        let mut keys_open = true;
        let mut interrupted = false;
        let tty = self.tty.clone();
        let out = self.out.clone();
        let run = self.shell.run_script(script, &stdio, cancel.clone());
        tokio::pin!(run);
        let deadline = tokio::time::sleep(limit.unwrap_or(Duration::from_secs(365 * 24 * 3600)));
        tokio::pin!(deadline);
        let mut late = false;
        let result = loop {
            tokio::select! {
                status = &mut run => break (status, late),
                gone = changed.changed(), if keys_open => {
                    if gone.is_err() {
                        keys_open = false;
                    }
                    if !interrupted && tty.interrupts() != seen {
                        interrupted = true;
                        // Before the echo, which waits while the output does (a command
                        // printing to a client that does not read).
                        cancel.cancel();
                        // What a terminal echoes for Ctrl-C, and the newline bash adds.
                        let _ = out.write_str("^C\n").await;
                    }
                }
                _ = &mut deadline, if limit.is_some() && !late => {
                    late = true;
                    cancel.cancel();
                }
            }
        };
        self.tty.end_foreground();
        self.seen = self.tty.interrupts();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scp_sink_and_source_are_legacy_scp() {
        for cmd in [
            "scp -t -- /x",
            "scp -r -d -t -- dir",
            "scp -f -- a b",
            "scp -v -p -f x",
        ] {
            assert!(legacy_scp(cmd), "{cmd}");
            assert_eq!(exec_script(cmd.as_bytes()), Err(LEGACY_SCP.to_string()));
        }
        for cmd in ["scp", "scp a b", "scp -- -t", "echo scp -t", "scpx -t"] {
            assert!(!legacy_scp(cmd), "{cmd}");
        }
    }
}
