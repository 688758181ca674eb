//! `eval [arg ...]`: run the arguments, joined by spaces, as shell input.

use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;
use crate::shell::{Shell, parse_program};

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    let text = args.join(" ");
    match parse_program(&text) {
        Ok(program) => sh.exec_nested_input("eval", &program, io).await,
        Err(e) => sh.fail(e, io).await,
    }
}
