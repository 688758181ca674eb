//! `local [name[=value] ...]`: variables visible only in the running function (and the
//! functions it calls).

use crate::shell::Shell;
use crate::shell::exec::Exec;
use crate::shell::redirect::Fds;

pub(crate) async fn run(sh: &mut Shell, args: Vec<String>, io: &Fds) -> Exec<i32> {
    if sh.local_frames.is_empty() {
        return super::fail(sh, io, "local: can only be used in a function".into(), 1).await;
    }
    // `local -`: the function's changes to the `set` options end with it.
    let (dash, args): (Vec<String>, Vec<String>) = args.into_iter().partition(|a| a == "-");
    if !dash.is_empty() && !sh.local_dash_here() {
        let saved = (sh.call_depth, sh.opts.clone());
        sh.lines.local_opts.push(saved);
    }
    if args.is_empty() && !dash.is_empty() {
        return Ok(0);
    }
    super::declare::declare(sh, "local", args, io, true).await
}

impl Shell {
    /// Whether the running function has done `local -`.
    pub(crate) fn local_dash_here(&self) -> bool {
        self.lines
            .local_opts
            .last()
            .is_some_and(|(d, _)| *d == self.call_depth)
    }
}

#[cfg(test)]
mod tests {
    use crate::shell::testing::run;

    #[tokio::test]
    async fn local_hides_global() {
        let script = "x=g; f() { local x=l; echo $x; }; f; echo $x";
        let expected = (0, "l\ng\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn local_outside_function() {
        let script = "local x=1; echo $?";
        let expected = (
            0,
            "1\n".to_string(),
            "bash: line 1: local: can only be used in a function\n".to_string(),
        );
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn local_seen_by_callee() {
        let script = "g() { echo $v; }; f() { local v=fv; g; }; f; echo \"[$v]\"";
        let expected = (0, "fv\n[]\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn local_without_value_is_unset() {
        let script = "x=g; f() { local x; echo \"[${x-unset}]\"; }; f";
        let expected = (0, "[unset]\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }

    #[tokio::test]
    async fn local_array() {
        let script = "f() { local -a a=(1 2); echo ${#a[@]}; }; f; echo \"[${a-}]\"";
        let expected = (0, "2\n[]\n".to_string(), "".to_string());
        assert_eq!(run(script).await, expected);
    }
}
