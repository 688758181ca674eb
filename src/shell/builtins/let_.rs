//! `let expr ...`: evaluate arithmetic; status 0 if the last value is non-zero.

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if args.is_empty() {
        return super::fail(sh, io, "let: expression expected".into(), 1).await;
    }
    let mut last = 0;
    for a in &args {
        match crate::shell::arith::eval_str(sh, a) {
            Ok(v) => last = v,
            Err(e) => {
                if let Some(name) = e.unbound() {
                    let err = crate::shell::ShellError::Unbound(name.to_string());
                    return sh.fail(err, io).await;
                }
                return super::fail(sh, io, format!("let: {e}"), 1).await;
            }
        }
    }
    Ok(i32::from(last == 0))
}
