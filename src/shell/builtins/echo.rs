//! `echo [-neE] [arg ...]`: write arguments to standard output (bash's builtin semantics;
//! like bash's, it has no `--help`).

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if io.is_closed(1) {
        return super::fail(sh, io, "echo: write error: Bad file descriptor".into(), 1).await;
    }
    let mut newline = true;
    let mut escapes = false;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.len() < 2
            || !a.starts_with('-')
            || !a[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E'))
        {
            break;
        }
        for c in a[1..].chars() {
            match c {
                'n' => newline = false,
                'e' => escapes = true,
                _ => escapes = false,
            }
        }
        i += 1;
    }
    let mut out = String::new();
    for (k, a) in args[i..].iter().enumerate() {
        if k > 0 {
            out.push(' ');
        }
        if escapes {
            if let Some(pos) = a.find("\\c") {
                out.push_str(&crate::shell::expand::ansi_c_decode(&a[..pos]));
                let _ = io.stdout().write_str(&out).await;
                return Ok(0);
            }
            out.push_str(&crate::shell::expand::ansi_c_decode(a));
        } else {
            out.push_str(a);
        }
    }
    if newline {
        out.push('\n');
    }
    match io.stdout().write_str(&out).await {
        Ok(()) => Ok(0),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Ok(forkbox_commands::STATUS_BROKEN_PIPE)
        }
        Err(_) => Ok(1),
    }
}
