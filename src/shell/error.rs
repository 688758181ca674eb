//! The one place where shell errors become an exit status and a line on stderr.
//!
//! Every failure the interpreter itself detects (as opposed to a command's own failure,
//! which the command reports) is a [`ShellError`]. [`ShellError::status`] gives the exit
//! status bash would give, [`ShellError::is_fatal`] says whether a non-interactive bash
//! would abandon the rest of the script, and `Display` is the message after the prefix
//! bash gives it (`bash: line 3: `, see `Shell::message_prefix`).

use forkbox_commands::FsError;

/// The shell's name: `$0` of a session's shell, as on a host where `ssh host 'cmd'` runs
/// `bash -c 'cmd'`, and the prefix of messages printed where no shell state is at hand.
pub const PROGRAM: &str = "bash";

#[derive(Debug, Clone, thiserror::Error)]
pub enum ShellError {
    /// The full wording (`syntax error near unexpected token `fi'`).
    #[error("{0}")]
    Syntax(String),
    /// Input that ends inside a construct (`"abc`, `$(echo`, `a=(1`), worded as bash
    /// words it, with the line bash names and the status it gives (1 for a compound
    /// assignment, 2 otherwise).
    #[error("{message}")]
    Unclosed {
        message: String,
        line: usize,
        status: i32,
    },
    /// A malformed `[[ ]]` expression, worded as bash words it (empty: bash says
    /// nothing). bash stops reading there with the status of the last command.
    #[error("{0}")]
    CondSyntax(String),
    /// A syntax error in the body of a command substitution, found when the command it
    /// is in was read: bash names the token, then shows the line, and exits with 127.
    #[error("{message}\n{PROGRAM}: `{line}'")]
    SubstSyntax { message: String, line: String },
    #[error("{0}: command not found")]
    CommandNotFound(String),
    /// A shell feature forkbox does not implement (STYLE habit 12: never a silent no-op).
    #[error("{0}: not supported")]
    Unsupported(String),
    #[error("{path}: {source}")]
    File {
        path: String,
        #[source]
        source: FsError,
    },
    /// Running a file as a command failed (`./x: No such file or directory`).
    #[error("{path}: {source}")]
    Exec {
        path: String,
        #[source]
        source: FsError,
    },
    #[error("{0}: ambiguous redirect")]
    AmbiguousRedirect(String),
    #[error("{0}: Bad file descriptor")]
    BadFd(String),
    #[error("{0}: bad substitution")]
    BadSubstitution(String),
    #[error("{name}: {message}")]
    ParamError { name: String, message: String },
    #[error("{0}: unbound variable")]
    Unbound(String),
    #[error("{0}: readonly variable")]
    Readonly(String),
    /// An expansion that cannot be done, worded in full (`x: invalid variable name`).
    #[error("{0}")]
    Expansion(String),
    #[error("{0}: readonly function")]
    ReadonlyFunction(String),
    /// An array subscript out of range in an assignment (`a[-5]=x`, `a[""]=x`).
    #[error("{0}: bad array subscript")]
    BadSubscript(String),
    /// Arithmetic error inside an expansion (`$((1/0))`): fatal, like bash.
    #[error("{expr}: {message}")]
    Arithmetic { expr: String, message: String },
    /// Arithmetic error in the value assigned to an integer variable (`declare -i n;
    /// n='1 +'`): bash ends the whole script, not only the command.
    #[error("{expr}: {message}")]
    ArithmeticAssign { expr: String, message: String },
    /// Arithmetic error in a `((…))` command or `let`: the command fails, the script goes on.
    #[error("((: {expr}: {message}")]
    ArithmeticCommand { expr: String, message: String },
    #[error("command substitution: output larger than {0} bytes")]
    SubstitutionTooLarge(usize),
    #[error("here-document larger than {0} bytes")]
    HereDocTooLarge(usize),
    #[error("{0}: maximum function nesting level exceeded ({1})")]
    RecursionLimit(String, usize),
    #[error("{0}: not a valid identifier")]
    InvalidIdentifier(String),
    /// A builtin's usage error or failure, already worded (`cd: x: No such file or directory`).
    #[error("{0}")]
    Builtin(String),
    /// A named limit was exceeded (brace expansion size, ...); the message says which.
    #[error("{0}")]
    Limit(String),
    /// `failglob`: a pattern matched no file; the command is not run.
    #[error("no match: {0}")]
    NoMatch(String),
    #[error("{0}: bad regular expression")]
    BadRegex(String),
    /// The session has as many live tasks as it may; the running command stops.
    #[error(transparent)]
    TooManyTasks(#[from] forkbox_commands::TooManyTasks),
    /// The session's memory budget is spent; `what` is the variable or step that asked.
    #[error("{what}: {source}")]
    OutOfMemory {
        what: String,
        #[source]
        source: forkbox_commands::OutOfMemory,
    },
}

impl ShellError {
    /// The exit status bash gives for this error.
    pub fn status(&self) -> i32 {
        match self {
            ShellError::Syntax(_) | ShellError::Unsupported(_) | ShellError::CondSyntax(_) => 2,
            ShellError::Unclosed { status, .. } => *status,
            ShellError::CommandNotFound(_) | ShellError::SubstSyntax { .. } => 127,
            // bash 5.2 exits a non-interactive shell with 127 for these.
            ShellError::ParamError { .. } | ShellError::Unbound(_) => 127,
            ShellError::BadRegex(_) => 2,
            ShellError::Exec {
                source: FsError::NotFound,
                ..
            } => 127,
            ShellError::Exec { .. } => 126,
            _ => 1,
        }
    }

    /// Whether a non-interactive bash abandons the script on this error.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            ShellError::BadSubstitution(_)
                | ShellError::ParamError { .. }
                | ShellError::Unbound(_)
                | ShellError::Arithmetic { .. }
                | ShellError::ArithmeticAssign { .. }
                | ShellError::SubstitutionTooLarge(_)
                | ShellError::RecursionLimit(..)
                | ShellError::Readonly(_)
                | ShellError::BadSubscript(_)
                | ShellError::Expansion(_)
                | ShellError::TooManyTasks(_)
                | ShellError::OutOfMemory { .. }
        )
    }

    /// Whether bash answers this error by abandoning only the current top-level command
    /// (the script goes on with its next line; `eval` and `source` with their next
    /// command; a subshell ends), rather than the whole script.
    pub fn discards_command(&self) -> bool {
        matches!(
            self,
            ShellError::BadSubstitution(_)
                | ShellError::Arithmetic { .. }
                | ShellError::Readonly(_)
                | ShellError::BadSubscript(_)
                | ShellError::Expansion(_)
                | ShellError::NoMatch(_)
        )
    }

    /// The full line printed on stderr where no shell is at hand (`bash: …`); a shell
    /// prints [`ShellError::message_with`] its own prefix.
    pub fn message(&self) -> String {
        self.message_with(&format!("{PROGRAM}: "))
    }

    /// The full text printed on stderr after `prefix` (`bash: line 2: `); each line of a
    /// two-line message carries it.
    pub fn message_with(&self, prefix: &str) -> String {
        match self {
            ShellError::CondSyntax(m) if m.is_empty() => String::new(),
            ShellError::SubstSyntax { message, line } => {
                format!("{prefix}{message}\n{prefix}`{line}'\n")
            }
            ShellError::Syntax(m) | ShellError::Unclosed { message: m, .. } => two_lines(prefix, m),
            _ => format!("{prefix}{self}\n"),
        }
    }
}

/// `message` after `prefix`, and when it is two lines (a reason, then `syntax error:
/// `TEXT'`), its second line after `prefix` too (the text keeps its own line breaks).
pub(crate) fn two_lines(prefix: &str, message: &str) -> String {
    match message.split_once('\n') {
        Some((first, second)) => format!("{prefix}{first}\n{prefix}{second}\n"),
        None => format!("{prefix}{message}\n"),
    }
}

pub type ShellResult<T> = Result<T, ShellError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_match_bash() {
        assert_eq!(ShellError::CommandNotFound("x".into()).status(), 127);
        assert_eq!(ShellError::Syntax("x".into()).status(), 2);
        assert_eq!(ShellError::Unsupported("coproc".into()).status(), 2);
        assert_eq!(
            ShellError::Unsupported("coproc".into()).message(),
            "bash: coproc: not supported\n"
        );
        assert!(!ShellError::CommandNotFound("x".into()).is_fatal());
    }
}
