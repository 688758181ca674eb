//! GNU's behaviours, each checked against `/bin/grep` 3.8 and `/bin/sed` 4.9 (C.UTF-8).

use super::*;

fn grep_flags() -> Flags {
    Flags::default()
}

fn sed_flags() -> Flags {
    Flags {
        strict: true,
        ..Flags::default()
    }
}

fn find(p: &str, d: Dialect, f: Flags, hay: &str) -> Option<String> {
    let re = compile(p, d, f).unwrap_or_else(|e| panic!("{p}: {e}"));
    re.find_at(hay.as_bytes(), 0)
        .unwrap_or_else(|e| panic!("{p}: {e}"))
        .map(|(s, e)| hay[s..e].to_string())
}

/// Every match, as `grep -o` prints them (empty ones skipped).
fn all(p: &str, d: Dialect, f: Flags, hay: &str) -> Vec<String> {
    let re = compile(p, d, f).unwrap_or_else(|e| panic!("{p}: {e}"));
    let mut out = Vec::new();
    let mut at = 0;
    while let Ok(Some((s, e))) = re.find_at(hay.as_bytes(), at) {
        if e > s {
            out.push(hay[s..e].to_string());
            at = e;
        } else {
            at = s + 1;
        }
        if at > hay.len() {
            break;
        }
    }
    out
}

fn err(p: &str, d: Dialect, f: Flags) -> String {
    match compile(p, d, f) {
        Ok(_) => panic!("{p} compiled"),
        Err(e) => e.msg,
    }
}

use Dialect::{Basic as B, Extended as E};

/// `echo 'aa*a -b w' | grep -o PAT` (BRE) and `grep -Eo` (ERE), 3.8.
#[test]
fn grep_reading_table() {
    let hay = "aa*a -b w";
    let g = grep_flags();
    assert_eq!(all("a**", B, g, hay), ["aa", "a"]);
    assert_eq!(all("*a", B, g, hay), ["*a"]);
    assert_eq!(all(r"a\{1\}\{2\}", B, g, hay), ["aa"]);
    assert_eq!(all(r"a\{,2\}", B, g, hay), ["aa", "a"]);
    assert_eq!(all(r"\w\+", B, g, hay), ["aa", "a", "b", "w"]);
    assert_eq!(all("[[.-.]]", B, g, hay), ["-"]);
    assert_eq!(all("[[=a=]]", B, g, hay), ["a", "a", "a"]);
    assert_eq!(all(r"^*", B, g, "*x"), ["*"]);
    let hay = "aa*a -b w a{1 {1} a{ a{} +a";
    assert_eq!(all("a{1", E, g, hay), ["a{1"]);
    assert_eq!(all("a{", E, g, hay), ["a{", "a{", "a{"]);
    assert_eq!(all("a{x}", E, g, hay), Vec::<String>::new());
    assert_eq!(all("a{1}{2}", E, g, hay), ["aa"]);
    assert_eq!(all(r"(a)\1", E, g, hay), ["aa"]);
    assert_eq!(all("a)", E, g, "a)"), ["a)"]);
    assert_eq!(all(r"\(", E, g, "x(y"), ["("]);
    let re = compile("*a", E, g).expect("compiles");
    assert_eq!(re.warnings(), ["* at start of expression"]);
    assert_eq!(all("*a", E, g, "ba"), ["a"]);
    assert_eq!(all("{1}", E, g, hay), ["1}"]);
    // Leftmost-longest, where leftmost-first would stop early.
    assert_eq!(all(r"a\|ab\|abc", B, g, "abcd"), ["abc"]);
    assert_eq!(find("a?(ab)?", E, g, "ab").as_deref(), Some("ab"));
    assert_eq!(find("(a|ab)(c|bcd)", E, g, "abcd").as_deref(), Some("abcd"));
    // `\t` is a `t`, an unknown escape the character itself.
    assert_eq!(all(r"\t\%", B, g, "t%"), ["t%"]);
}

#[test]
fn grep_errors() {
    let g = grep_flags();
    assert_eq!(err(r"a\", B, g), "Trailing backslash");
    assert_eq!(err(r"\(", B, g), r"Unmatched ( or \(");
    assert_eq!(err(r"\)", B, g), r"Unmatched ) or \)");
    assert_eq!(err(r"a\{1", B, g), r"Unmatched \{");
    assert_eq!(err(r"a\{1,2", B, g), r"Unmatched \{");
    assert_eq!(err(r"a\{1,0\}", B, g), r"Invalid content of \{\}");
    assert_eq!(err(r"a\{x\}", B, g), r"Invalid content of \{\}");
    assert_eq!(err("[", B, g), "Invalid regular expression");
    assert_eq!(err("a[^", B, g), "Invalid regular expression");
    assert_eq!(err("[a", B, g), "Unmatched [, [^, [:, [., or [=");
    assert_eq!(err("[[:alpha:]", B, g), "Unmatched [, [^, [:, [., or [=");
    assert_eq!(err("[[:foo:]]", B, g), "Invalid character class name");
    assert_eq!(err(r"\1", B, g), "Invalid back reference");
    assert_eq!(err(r"\(a\)\2", B, g), "Invalid back reference");
    assert_eq!(err("[z-a]", B, g), "Invalid range end");
    assert_eq!(err(r"x\{99999\}", B, g), "Regular expression too big");
    assert_eq!(err("[[.ab.]]", B, g), "Invalid collation character");
    assert_eq!(
        err("[:alpha:]", B, g),
        "character class syntax is [[:space:]], not [:space:]"
    );
    assert_eq!(err("(", E, g), r"Unmatched ( or \(");
    assert_eq!(err("a{1,0}", E, g), r"Invalid content of \{\}");
    assert_eq!(err("a{}", E, g), r"Invalid content of \{\}");
    assert_eq!(err("x{99999}", E, g), "Regular expression too big");
    // A back-reference may not name a group of an earlier alternative.
    assert_eq!(err(r"\(a\)\|\(b\)\1", B, g), "Invalid back reference");
    assert_eq!(err(r"\(a\|b\1\)", B, g), "Invalid back reference");
    assert_eq!(all(r"\(\(a\)\|b\)\2", B, g, "aa bb ab"), ["aa"]);
    assert_eq!(all(r"\(a\)\(b\|\1\)", B, g, "aa bb ab"), ["aa", "ab"]);
    assert_eq!(all(r"x\|\(a\)\1", B, g, "aa bb ab"), ["aa"]);
    // A leading `{` that starts no interval is dropped.
    assert_eq!(all("{b", E, g, "a{b"), ["b"]);
}

/// `echo … | sed 's/PAT/X/'` and `sed -E`, 4.9: glibc's strict reading.
#[test]
fn sed_strict_table() {
    let s = sed_flags();
    assert_eq!(err("a**", B, s), "Invalid preceding regular expression");
    assert_eq!(
        err(r"a*\{2\}", B, s),
        "Invalid preceding regular expression"
    );
    assert_eq!(err(r"a\?*", B, s), "Invalid preceding regular expression");
    assert_eq!(err(r"\{1\}", B, s), "Invalid preceding regular expression");
    assert_eq!(err(")", E, s), r"Unmatched ) or \)");
    assert_eq!(err("a{1", E, s), r"Unmatched \{");
    assert_eq!(err("{1}", E, s), "Invalid preceding regular expression");
    assert_eq!(err("*a", E, s), "Invalid preceding regular expression");
    assert_eq!(err("a|*b", E, s), "Invalid preceding regular expression");
    assert_eq!(err("^*", E, s), "Invalid preceding regular expression");
    assert_eq!(err("a{x}", E, s), r"Invalid content of \{\}");
    assert_eq!(find(r"a\+\?", B, s, "aa*a").as_deref(), Some("aa"));
    assert_eq!(find("a**", E, s, "aa*a").as_deref(), Some("aa"));
    assert_eq!(find("*a", B, s, "aa*a -b").as_deref(), Some("*a"));
    assert_eq!(find(r"\(*a\)", B, s, "aa*a").as_deref(), Some("*a"));
    assert_eq!(find("^*a", B, s, "*a").as_deref(), Some("*a"));
    assert_eq!(find("^*a", B, s, "a*a"), None);
    assert_eq!(find("x$y", B, s, "x$y").as_deref(), Some("x$y"));
    assert_eq!(find("a^b", B, s, "a^b").as_deref(), Some("a^b"));
    assert_eq!(find("x$y", E, s, "x$y"), None);
    assert_eq!(find("a|", E, s, "aa").as_deref(), Some("a"));
}

#[test]
fn captures_are_posix() {
    let re = compile("(a|ab)(c|bcd)", E, sed_flags()).expect("compiles");
    let c = re
        .captures_at(b"abcd", 0)
        .expect("no budget issue")
        .expect("matches");
    assert_eq!(
        (c.get(0), c.get(1), c.get(2)),
        (Some((0, 4)), Some((0, 1)), Some((1, 4)))
    );
    let re = compile(r"\(a*\)b\1", B, sed_flags()).expect("compiles");
    let c = re.captures_at(b"xaabaac", 0).expect("ok").expect("matches");
    assert_eq!((c.get(0), c.get(1)), (Some((1, 6)), Some((1, 3))));
    // A group that took no part.
    let re = compile("(x)?y", E, sed_flags()).expect("compiles");
    let c = re.captures_at(b"y", 0).expect("ok").expect("matches");
    assert_eq!(c.get(1), None);
}

#[test]
fn backreferences() {
    let g = grep_flags();
    assert_eq!(all(r"\([a-z]\)\1", B, g, "abccdeef"), ["cc", "ee"]);
    assert_eq!(
        find(r"^\(.*\)\1$", B, g, "abcabc").as_deref(),
        Some("abcabc")
    );
    assert_eq!(find(r"^\(.*\)\1$", B, g, "abcab"), None);
    let i = Flags { icase: true, ..g };
    assert_eq!(find(r"\(a\)\1", B, i, "xAay").as_deref(), Some("Aa"));
    // Each `-e` pattern numbers its own groups.
    let re = compile_many(&[r"\(a\)\1", r"\(b\)\1"], B, g).expect("compiles");
    assert!(re.is_match(b"xbb").expect("ok"));
    assert!(!re.is_match(b"ab").expect("ok"));
}

#[test]
fn hostile_patterns_end() {
    let re = compile(r"\(a*\)*\1b", B, grep_flags()).expect("compiles");
    let hay = "a".repeat(5000);
    // Either answer is fine; it must come back (no match, or the budget error).
    let r = re.is_match(hay.as_bytes());
    assert!(matches!(r, Ok(false) | Err(TooComplex)));
    let re = compile("(a*)*b", E, grep_flags()).expect("compiles");
    assert_eq!(re.find_at(hay.as_bytes(), 0), Ok(None));
    assert_eq!(re.captures_at(hay.as_bytes(), 0), Ok(None));
}

#[test]
fn classes_words_and_case() {
    let g = grep_flags();
    assert_eq!(all("[[:alpha:]]+", E, g, "é1b"), ["é", "b"]);
    assert_eq!(all(r"\<a", B, g, "a ba ab"), ["a", "a"]);
    assert_eq!(all(r"b\>", B, g, "a bb ab"), ["b", "b"]);
    assert_eq!(find(r"\`a", B, g, "ba"), None);
    let w = Flags {
        whole_word: true,
        ..g
    };
    assert_eq!(find("y*", B, w, "xyz"), None);
    assert_eq!(find("-b", B, w, "a-b c").as_deref(), None);
    assert_eq!(find("b c", B, w, "a-b c").as_deref(), Some("b c"));
    let x = Flags {
        whole_line: true,
        ..g
    };
    assert_eq!(find("a.", B, x, "ab").as_deref(), Some("ab"));
    assert_eq!(find("a", B, x, "ab"), None);
    let i = Flags { icase: true, ..g };
    assert_eq!(find("É", B, i, "xé").as_deref(), Some("é"));
    assert_eq!(find("[^a]", B, i, "Ab"), Some("b".into()));
    let m = Flags {
        multiline: true,
        ..sed_flags()
    };
    assert_eq!(all("^b", B, m, "a\nb"), ["b"]);
    assert_eq!(all("^b", B, sed_flags(), "a\nb"), Vec::<String>::new());
    assert_eq!(find("a.b", B, sed_flags(), "a\nb").as_deref(), Some("a\nb"));
    // Bytes that are not UTF-8 match no `.`.
    let re = compile("a.b", B, g).expect("compiles");
    assert!(!re.is_match(b"a\xffb").expect("ok"));
}

/// The lines a [`LineFinder`] steps to over the whole text: the first match's line, then
/// on from the next line.
fn finder_lines(f: &LineFinder, text: &str) -> Vec<usize> {
    let hay = text.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(p) = f.find_at(hay, at) {
        if p >= hay.len() {
            break;
        }
        let start = hay[..p]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        out.push(hay[..start].iter().filter(|&&b| b == b'\n').count());
        at = match hay[p..].iter().position(|&b| b == b'\n') {
            Some(i) => p + i + 1,
            None => break,
        };
    }
    out
}

#[test]
fn line_finder_selects_what_matching_each_line_selects() {
    let text = "abc\n\nfoo bar\n  x\nfoo\nbarfoo\n\u{e9}t\u{e9}\nA.B\n a b \nend\n";
    let cases: &[(&str, Dialect, Flags)] = &[
        ("foo", Dialect::Basic, grep_flags()),
        ("^foo", Dialect::Basic, grep_flags()),
        ("foo$", Dialect::Basic, grep_flags()),
        ("^$", Dialect::Basic, grep_flags()),
        ("", Dialect::Basic, grep_flags()),
        ("a.*b", Dialect::Basic, grep_flags()),
        ("[^x]*x", Dialect::Basic, grep_flags()),
        ("a[[:space:]]*b", Dialect::Basic, grep_flags()),
        ("\\<foo\\>", Dialect::Basic, grep_flags()),
        ("\\`foo", Dialect::Basic, grep_flags()),
        ("bar\\'", Dialect::Basic, grep_flags()),
        ("c|^f|t.$", Dialect::Extended, grep_flags()),
        ("A.B", Dialect::Literal, grep_flags()),
        ("[^a-z]", Dialect::Extended, grep_flags()),
        (
            "FOO",
            Dialect::Basic,
            Flags {
                icase: true,
                ..grep_flags()
            },
        ),
        (
            "foo",
            Dialect::Basic,
            Flags {
                whole_line: true,
                ..grep_flags()
            },
        ),
        (
            "foo",
            Dialect::Basic,
            Flags {
                whole_word: true,
                ..grep_flags()
            },
        ),
        (
            "..",
            Dialect::Basic,
            Flags {
                c_locale: true,
                ..grep_flags()
            },
        ),
    ];
    for (p, d, f) in cases {
        let re = compile(p, *d, *f).unwrap_or_else(|e| panic!("{p}: {e}"));
        let each: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| re.is_match(l.as_bytes()).unwrap_or(false))
            .map(|(i, _)| i)
            .collect();
        let finder = line_finder(&[p], *d, *f).unwrap_or_else(|| panic!("{p}: no finder"));
        assert_eq!(finder_lines(&finder, text), each, "{p}");
    }
    assert!(line_finder(&["\\(a\\)\\1"], Dialect::Basic, grep_flags()).is_none());
}

#[test]
fn icase_folds_dotless_i_as_gnu() {
    let i = Flags {
        icase: true,
        ..grep_flags()
    };
    // The fast path (no back-reference) and the backtracker (one) agree with GNU: i, I
    // and the dotless ı fold together; the dotted İ stays apart.
    for hay in ["ı", "I", "i"] {
        assert_eq!(find("i", B, i, hay).as_deref(), Some(hay));
        assert_eq!(find("[h-j]", B, i, hay).as_deref(), Some(hay));
        let twice = format!("{hay}{hay}");
        assert_eq!(find(r"\(ı\)\1", B, i, &twice).as_deref(), Some(&*twice));
    }
    assert_eq!(find("i", B, i, "İ"), None);
    assert_eq!(find("[^i]", B, i, "ı"), None);
}

/// After any anchor glibc lets no repetition follow: a BRE's `*` is then itself, sed's
/// ERE refuses it, and grep's ERE warns when the anchors start the pattern.
#[test]
fn repetition_after_an_anchor() {
    let b = Dialect::Basic;
    let e = Dialect::Extended;
    assert_eq!(find(r"\b*", b, sed_flags(), "a*b").as_deref(), Some("*"));
    assert_eq!(find(r"\<*", b, sed_flags(), "a*b"), None);
    assert_eq!(find(r"a\>*", b, grep_flags(), "a*").as_deref(), Some("a*"));
    for p in ["$*", r"\<*", "a$*", r"\b+"] {
        assert_eq!(
            err(p, e, sed_flags()),
            "Invalid preceding regular expression",
            "{p}"
        );
    }
    for p in ["$*", r"\<*", r"\`*", "^$*"] {
        let re = compile(p, e, grep_flags()).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert_eq!(re.warnings(), ["* at start of expression"], "{p}");
    }
    let re = compile("a$*", e, grep_flags()).unwrap_or_else(|e| panic!("{e}"));
    assert!(re.warnings().is_empty());
}

/// A pattern's byte that is no UTF-8 matches that byte, even inside a character.
#[test]
fn invalid_byte_in_pattern_matches_the_byte() {
    let p: String = ['a', byte_char(0xff)].iter().collect();
    let re = compile(&p, Dialect::Basic, grep_flags()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(re.find_at(b"xa\xffb", 0).ok().flatten(), Some((1, 3)));
    let lone: String = [byte_char(0xa9)].iter().collect();
    let re = compile(&lone, Dialect::Basic, grep_flags()).unwrap_or_else(|e| panic!("{e}"));
    assert!(re.is_match("\u{e9}".as_bytes()).unwrap_or(false));
}
