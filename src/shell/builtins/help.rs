//! `help`: list every command this shell can run, with a one-line summary.

use forkbox_commands::Launcher;

use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;
use crate::shell::{Shell, ShellLauncher};

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let all = ShellLauncher::new(sh.registry.clone()).commands();
    let width = all.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for c in all
        .iter()
        .filter(|c| args.is_empty() || args.contains(&c.name))
    {
        out.push_str(&format!("{:width$}  {}\n", c.name, c.summary));
    }
    let _ = io.stdout().write_str(&out).await;
    Ok(0)
}
