//! Test support for the interpreter's unit tests: a [`Shell`] over the in-memory
//! filesystem, a way to run a script and collect what it printed, and read access to the
//! state it left behind. Every unit test of `shell/` goes through here.

use std::sync::Arc;
use std::time::Duration;

use forkbox_commands::testing::MemFs;
use forkbox_commands::{Budget, Input, pipe};
use tokio_util::sync::CancellationToken;

use super::{Shell, ShellConfig, Stdio, Var};
use crate::registry::Registry;

/// A fresh non-interactive shell in `/` over `fs`, with `HOME=/home/u` and `USER=u`.
pub(crate) fn shell_on(fs: Arc<MemFs>) -> Shell {
    Shell::new(ShellConfig {
        fs,
        registry: Arc::new(Registry::with_native()),
        env: vec![
            ("HOME".into(), "/home/u".into()),
            ("USER".into(), "u".into()),
        ],
        cwd: "/".into(),
        interactive: false,
        budget: Budget::default(),
    })
}

/// A fresh shell over an empty in-memory filesystem.
pub(crate) fn shell() -> Shell {
    shell_on(MemFs::new())
}

/// Runs `script` in `sh` with empty stdin; gives (status, stdout, stderr).
pub(crate) async fn run_on(sh: &mut Shell, script: &str) -> (i32, String, String) {
    run_with_stdin(sh, script, Input::empty()).await
}

/// Runs `script` in `sh` reading `stdin`; gives (status, stdout, stderr).
pub(crate) async fn run_with_stdin(
    sh: &mut Shell,
    script: &str,
    stdin: Input,
) -> (i32, String, String) {
    let (ow, or) = pipe();
    let (ew, er) = pipe();
    let io = Stdio {
        stdin,
        stdout: ow,
        stderr: ew,
        tty: None,
        terminal: None,
    };
    let out = tokio::spawn(async move { or.read_to_end(1 << 24).await.unwrap_or_default() });
    let err = tokio::spawn(async move { er.read_to_end(1 << 24).await.unwrap_or_default() });
    let status = tokio::time::timeout(
        Duration::from_secs(20),
        sh.run_script(script, &io, CancellationToken::new()),
    )
    .await
    .expect("script must finish");
    drop(io);
    let out = String::from_utf8_lossy(&out.await.unwrap_or_default()).into_owned();
    let err = String::from_utf8_lossy(&err.await.unwrap_or_default()).into_owned();
    (status, out, err)
}

/// Runs `script` in a fresh shell; gives (status, stdout, stderr).
pub(crate) async fn run(script: &str) -> (i32, String, String) {
    run_on(&mut shell(), script).await
}

/// The scalar value of `name` in `sh` (following namerefs), `None` when unset.
pub(crate) fn var(sh: &Shell, name: &str) -> Option<String> {
    sh.get_str(name)
}

/// The stored variable `name` itself (value and attributes), without following namerefs.
pub(crate) fn raw_var<'a>(sh: &'a Shell, name: &str) -> Option<&'a Var> {
    sh.vars.get(name)
}
