//! awk's regular expressions: gawk's dialect of POSIX ERE (its escapes, literal leading
//! operators, intervals) on the shared GNU engine ([`crate::gnu_regex`]), with POSIX
//! leftmost-longest matches for `match`, `sub`/`gsub`, `split` and the separators.
//! [`compile`] is the one entry point.

use crate::gnu_regex::{self, Captures, Flags};

/// A compiled awk regular expression.
#[derive(Debug)]
pub struct Regex {
    inner: gnu_regex::Regex,
}

/// Why a regular expression failed: its compile message (`Unmatched ( or \(: /(/`).
pub type CompileError = String;

/// A search that gave up (the backtracker's budget): gawk's wording is not known, this one
/// says what happened.
fn too_complex(_: gnu_regex::TooComplex) -> String {
    "regular expression too complex to match (backtracking limit reached)".to_string()
}

impl Regex {
    /// Warnings gawk gives for the pattern (an escape that is no operator).
    pub fn warnings(&self) -> &[String] {
        self.inner.warnings()
    }

    /// Whether it matches anywhere in `hay`.
    pub fn is_match(&self, hay: &[u8]) -> Result<bool, String> {
        self.inner.is_match(hay).map_err(too_complex)
    }

    /// The leftmost-longest match at or after `start`.
    pub fn find_at(&self, hay: &[u8], start: usize) -> Result<Option<(usize, usize)>, String> {
        self.inner.find_at(hay, start).map_err(too_complex)
    }

    /// The leftmost-longest non-empty match at or after `start` (separators).
    pub fn find_nonempty_at(
        &self,
        hay: &[u8],
        mut start: usize,
    ) -> Result<Option<(usize, usize)>, String> {
        while start <= hay.len() {
            match self.find_at(hay, start)? {
                None => return Ok(None),
                Some((s, e)) if e > s => return Ok(Some((s, e))),
                Some((s, _)) => start = s + 1,
            }
        }
        Ok(None)
    }

    /// Like [`Regex::find_at`], with the groups.
    pub fn captures_at(&self, hay: &[u8], start: usize) -> Result<Option<Captures>, String> {
        self.inner.captures_at(hay, start).map_err(too_complex)
    }
}

/// Compiles an awk ERE (`ignore_case` for IGNORECASE); `Err` is gawk's message, with the
/// pattern (`Unmatched ( or \(: /(/`).
pub fn compile(ere: &[u8], ignore_case: bool) -> Result<Regex, CompileError> {
    let flags = Flags {
        icase: ignore_case,
        c_locale: !super::value::utf8_mode(),
        ..Flags::default()
    };
    gnu_regex::compile_awk(ere, flags)
        .map(|inner| Regex { inner })
        .map_err(|e| format!("{}: /{}/", e.msg, String::from_utf8_lossy(ere)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(re: &str, s: &str) -> bool {
        compile(re.as_bytes(), false)
            .unwrap()
            .is_match(s.as_bytes())
            .unwrap()
    }

    fn find(re: &str, s: &str) -> Option<(usize, usize)> {
        compile(re.as_bytes(), false)
            .unwrap()
            .find_at(s.as_bytes(), 0)
            .unwrap()
    }

    fn err(re: &str) -> String {
        compile(re.as_bytes(), false).unwrap_err()
    }

    #[test]
    fn ere_basics() {
        assert!(m("^a.c$", "abc"));
        assert!(m("a|b", "b"));
        assert!(m("[]x]", "]"));
        assert!(m("[^]x]", "a"));
        assert!(!m("[^]x]", "]"));
        assert!(m("[[:alpha:]]+", "abc"));
        assert!(m("a{2}", "aa"));
        assert!(!m("^a{2}$", "a"));
        assert!(m("a{", "a{"));
        assert!(m("\\.", "."));
        assert!(!m("\\.", "a"));
        assert!(m("[a-c&]", "&"));
        assert!(m("a.b", "a\nb"));
        assert!(m("\\/", "/"));
        assert!(m("[\\/]", "/"));
        assert!(m("\\yfoo\\y", "a foo b"));
    }

    #[test]
    fn gawk_literal_readings() {
        // A leading repetition operator is itself; an unmatched `)` too.
        assert!(m("*a", "*a"));
        assert!(!m("*a", "a"));
        assert!(m("^+", "+x"));
        assert!(m("x|*a", "*a"));
        assert!(m("(*a)", "*a"));
        assert!(m("a)", "a)"));
        assert!(!m("a)", "a"));
        assert!(m("{2}", "{2}"));
    }

    #[test]
    fn gawk_escapes() {
        assert!(m("a\\bb", "a\u{8}b"));
        assert!(m("\\1", "\u{1}"));
        assert!(m("\\x41", "A"));
        assert!(m("a\\sb", "a b"));
        assert!(m("[a\\-z]", "-"));
        assert!(!m("[a\\-z]", "m"));
        assert!(m("[\\]]", "]"));
        assert!(m("[\\n]", "\n"));
        let re = compile(b"\\q", false).unwrap();
        assert!(re.is_match(b"q").unwrap());
        assert_eq!(
            re.warnings(),
            ["regexp escape sequence `\\q' is not a known regexp operator"]
        );
        assert!(compile(b"\\.", false).unwrap().warnings().is_empty());
    }

    #[test]
    fn leftmost_longest() {
        assert_eq!(find("o+|fo+", "foo bar"), Some((0, 3)));
        assert_eq!(find("(abc|abcabc)", "xabcabcy"), Some((1, 7)));
        assert_eq!(find("x*", "abc"), Some((0, 0)));
    }

    #[test]
    fn gawk_errors() {
        assert_eq!(err("("), "Unmatched ( or \\(: /(/");
        assert_eq!(err("[a"), "Unmatched [, [^, [:, [., or [=: /[a/");
        assert_eq!(err("a["), "Invalid regular expression: /a[/");
        assert_eq!(err("a\\"), "Trailing backslash: /a\\/");
        assert_eq!(err("a{3,1}"), "Invalid content of \\{\\}: /a{3,1}/");
        assert_eq!(
            err("[[:foo:]]"),
            "Invalid character class name: /[[:foo:]]/"
        );
        assert_eq!(err("[z-a]"), "Invalid range end: /[z-a]/");
    }

    #[test]
    fn case_folding() {
        assert!(compile(b"abc", true).unwrap().is_match(b"ABC").unwrap());
    }
}
