//! `readonly [name[=value] ...]`: mark shell variables as unchangeable.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let mut a = vec!["-r".to_string()];
    if args.is_empty() {
        let mut names: Vec<(&String, &crate::shell::Var)> =
            sh.vars.iter().filter(|(_, v)| v.readonly).collect();
        names.sort_by(|x, y| x.0.cmp(y.0));
        let out: String = names
            .iter()
            .map(|(k, v)| {
                format!(
                    "declare -r {k}={}\n",
                    super::dq(v.value.as_str().unwrap_or(""))
                )
            })
            .collect();
        let _ = io.stdout().write_str(&out).await;
        return Ok(0);
    }
    a.extend(args.into_iter().filter(|x| x != "-p"));
    super::declare::declare(sh, "readonly", a, io, false).await
}
