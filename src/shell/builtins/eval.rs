//! `eval [arg ...]`: run the arguments, joined by spaces, as shell input.

use crate::shell::error::ShellError;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;
use crate::shell::{Shell, parse_program};

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    // `--` ends eval's (empty) set of options.
    let args = match args.first() {
        Some(a) if a == "--" => &args[1..],
        _ => &args[..],
    };
    let text = args.join(" ");
    match parse_program(&text) {
        Ok(program) => {
            sh.exec_nested_input("eval", &program, Some(&text), io)
                .await
        }
        Err(whole) => {
            // The complete commands before a syntax error run first, as in bash.
            let (programs, e, (start, end)) =
                crate::shell::parse::leading_commands_read(&text, whole);
            let line = sh.lines.lineno;
            for (program, _) in &programs {
                sh.exec_nested_input("eval", program, None, io).await?;
            }
            // The message counts from the line of `eval`, not of the commands it ran, to
            // the command with the error.
            sh.lines.lineno = line;
            let unit = text
                .get(start..end)
                .filter(|u| !u.is_empty())
                .unwrap_or(&text);
            let before = text.get(..start).map_or(0, |t| t.matches('\n').count());
            let before = if unit.len() == text.len() { 0 } else { before };
            match e {
                ShellError::Syntax(ref m) if !m.contains("levels deep") => {
                    // bash names the input and its line: `bash: eval: line 1: syntax
                    // error ...`, and after a misplaced token the line itself.
                    let msg = sh.eval_syntax_message(&e, unit, before);
                    let _ = io.stderr().write_str(&msg).await;
                    sh.special_failed = true;
                    Ok(2)
                }
                // A malformed `[[ ]]`: named at its line of the string, status 2.
                ShellError::CondSyntax(_) => {
                    let msg = sh.eval_syntax_message(&e, unit, before);
                    let _ = io.stderr().write_str(&msg).await;
                    Ok(2)
                }
                ShellError::Unclosed { status, .. } => {
                    let msg = sh.eval_syntax_message(&e, unit, before);
                    let _ = io.stderr().write_str(&msg).await;
                    Ok(status)
                }
                e => sh.fail(e, io).await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn eval_runs_joined_args() {
        let script = "x='echo hi'; eval $x there";
        let expected = (0, "hi there\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn eval_sets_variables() {
        let script = "eval 'a=1; b=$((a+1))'; echo $a $b";
        let expected = (0, "1 2\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn eval_status() {
        let script = "eval false; echo $?; eval; echo $?";
        let expected = (0, "1\n0\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}
