//! Every expectation here was checked against bash 5.2 (`bash --norc -i` reading the
//! same lines); the history each test starts from is given.

use super::*;

fn history(lines: &[&str]) -> History {
    let mut h = History::default();
    for l in lines {
        h.add(l);
    }
    h
}

/// Expands `line` against `h`; the new line, or the error.
fn ex(h: &mut History, line: &str) -> Result<String, String> {
    expand(line, h, false).map(|e| e.line)
}

#[test]
fn event_designators() {
    let mut h = history(&["echo one two three", "ls -l", "echo a/b.c d"]);
    assert_eq!(ex(&mut h, "!!").as_deref(), Ok("echo a/b.c d"));
    assert_eq!(ex(&mut h, "!1").as_deref(), Ok("echo one two three"));
    assert_eq!(ex(&mut h, "!-2").as_deref(), Ok("ls -l"));
    assert_eq!(ex(&mut h, "!ec").as_deref(), Ok("echo a/b.c d"));
    assert_eq!(ex(&mut h, "!?two?").as_deref(), Ok("echo one two three"));
    assert_eq!(ex(&mut h, "!?two").as_deref(), Ok("echo one two three"));
    assert_eq!(
        ex(&mut h, "echo !?ech?x").as_deref(),
        Ok("echo echo a/b.c dx")
    );
    assert_eq!(ex(&mut h, "echo !#").as_deref(), Ok("echo echo "));
    assert_eq!(
        ex(&mut h, "echo x; !!").as_deref(),
        Ok("echo x; echo a/b.c d")
    );
}

#[test]
fn events_not_found() {
    let mut h = history(&["echo a b"]);
    for (line, err) in [
        ("echo !foo", "!foo: event not found"),
        ("echo !99", "!99: event not found"),
        ("echo !0", "!0: event not found"),
        ("echo !-9", "!-9: event not found"),
        ("echo x!( y", "!: event not found"),
        ("echo !\"x\"", "!\"x\": event not found"),
        ("echo !'x'", "!'x': event not found"),
    ] {
        assert_eq!(ex(&mut h, line), Err(err.to_string()), "{line}");
    }
    let mut empty = History::default();
    assert_eq!(ex(&mut empty, "!!"), Err("!!: event not found".into()));
    assert_eq!(ex(&mut empty, "echo !$"), Err("!: event not found".into()));
}

#[test]
fn where_bang_stays_text() {
    let mut h = history(&["echo a b"]);
    for line in [
        "echo x != y ! z !",
        "echo '!e'",
        "echo \\!e",
        "echo \"\\!e\"",
        "echo \"hi!\"",
        "echo hi!",
        "x=1; y=x; echo ${!y}",
        "echo [!a]",
        "echo $!",
    ] {
        let e = expand(line, &mut h, false);
        assert_eq!(
            e,
            Ok(Expansion {
                line: line.to_string(),
                changed: false,
                print_only: false
            }),
            "{line}"
        );
    }
    // Double quotes do not protect it; with extglob on, `!(…)` is a pattern.
    assert_eq!(
        ex(&mut h, "echo \"!e\"").as_deref(),
        Ok("echo \"echo a b\"")
    );
    assert_eq!(
        ex(&mut h, "echo \"it's !!\"").as_deref(),
        Ok("echo \"it's echo a b\"")
    );
    let e = expand("ls !(x)", &mut h, true).map(|e| e.line);
    assert_eq!(e.as_deref(), Ok("ls !(x)"));
}

#[test]
fn word_designators() {
    let mut h = history(&["echo one two three"]);
    assert_eq!(ex(&mut h, "!$").as_deref(), Ok("three"));
    assert_eq!(ex(&mut h, "echo !^").as_deref(), Ok("echo one"));
    assert_eq!(ex(&mut h, "echo !*").as_deref(), Ok("echo one two three"));
    assert_eq!(ex(&mut h, "echo !:2").as_deref(), Ok("echo two"));
    assert_eq!(ex(&mut h, "echo !!:0").as_deref(), Ok("echo echo"));
    assert_eq!(ex(&mut h, "echo !!:1-2").as_deref(), Ok("echo one two"));
    assert_eq!(ex(&mut h, "echo !!:1-").as_deref(), Ok("echo one two"));
    assert_eq!(ex(&mut h, "echo !!:-2").as_deref(), Ok("echo echo one two"));
    assert_eq!(ex(&mut h, "echo !!:2*").as_deref(), Ok("echo two three"));
    assert_eq!(ex(&mut h, "echo !!:2-$").as_deref(), Ok("echo two three"));
    assert_eq!(ex(&mut h, "echo !!$").as_deref(), Ok("echo three"));
    let mut h = history(&["three"]);
    assert_eq!(ex(&mut h, "!^"), Err("^: bad word specifier".into()));
    assert_eq!(ex(&mut h, "echo !:1"), Err(":1: bad word specifier".into()));
    assert_eq!(ex(&mut h, "!*").as_deref(), Ok(""));
    let mut h = history(&["echo a b"]);
    assert_eq!(
        ex(&mut h, "echo !!:3"),
        Err(":3: bad word specifier".into())
    );
    assert_eq!(
        ex(&mut h, "echo !!:3*-"),
        Err(":3*: bad word specifier".into())
    );
    assert_eq!(
        ex(&mut h, "echo !!:2-1"),
        Err(":2-1: bad word specifier".into())
    );
}

#[test]
fn words_split_at_operators_and_keep_quotes() {
    let mut h = history(&["echo xy >f; cat<f|wc -c&&true"]);
    assert_eq!(
        ex(&mut h, "echo !!:2 !!:3 !!:4 !!:5 !!:6 !!:7 !!:8").as_deref(),
        Ok("echo > f ; cat < f |")
    );
    assert_eq!(
        tokenize("echo \"a b\" 'c d' $(x y) 2>/dev/null e"),
        vec!["echo", "\"a b\"", "'c d'", "$(x y)", "2>", "/dev/null", "e"]
    );
}

#[test]
fn modifiers() {
    let mut h = history(&["echo a.b/c/d.txt"]);
    assert_eq!(
        ex(&mut h, "echo !$:h !$:t !$:r !$:e").as_deref(),
        Ok("echo a.b/c d.txt a.b/c/d .txt")
    );
    let mut h = history(&["echo a.b/c d"]);
    assert_eq!(ex(&mut h, "echo !!:1:r").as_deref(), Ok("echo a"));
    assert_eq!(ex(&mut h, "echo !!:2:e-").as_deref(), Ok("echo d-"));
    let mut h = history(&["echo a b"]);
    assert_eq!(ex(&mut h, "echo !!:q").as_deref(), Ok("echo 'echo a b'"));
    assert_eq!(ex(&mut h, "!!:x").as_deref(), Ok("'echo' 'a' 'b'"));
    let p = expand("!!:p", &mut h, false);
    assert_eq!(
        p,
        Ok(Expansion {
            line: "echo a b".into(),
            changed: true,
            print_only: true
        })
    );
    assert_eq!(
        ex(&mut h, "echo !!:0:z"),
        Err("z: unrecognized history modifier".into())
    );
    assert_eq!(
        ex(&mut h, "echo !!:/x"),
        Err("/: unrecognized history modifier".into())
    );
}

#[test]
fn substitutions() {
    let mut h = history(&["echo a.b/c e.txt a.b/c/d .txt"]);
    assert_eq!(
        ex(&mut h, "!echo:s/a/Z/").as_deref(),
        Ok("echo Z.b/c e.txt a.b/c/d .txt")
    );
    assert_eq!(
        ex(&mut h, "!echo:gs/e/E/").as_deref(),
        Ok("Echo a.b/c E.txt a.b/c/d .txt")
    );
    assert_eq!(
        ex(&mut h, "!!:Gs/a/A/").as_deref(),
        Ok("echo A.b/c e.txt A.b/c/d .txt")
    );
    let mut h = history(&["echo a b"]);
    assert_eq!(ex(&mut h, "^a^X").as_deref(), Ok("echo X b"));
    assert_eq!(ex(&mut h, "^a^X^ z").as_deref(), Ok("echo X b z"));
    assert_eq!(
        ex(&mut h, "^q^r"),
        Err(":s^q^r: substitution failed".into())
    );
    assert_eq!(
        ex(&mut h, "!!:s/q/r/"),
        Err(":s/q/r/: substitution failed".into())
    );
    assert_eq!(ex(&mut h, "!!:s/e/\\&&/").as_deref(), Ok("&echo a b"));
    let mut h = history(&["echo a/b.c d"]);
    assert_eq!(
        ex(&mut h, "echo !!:s//X/"),
        Err(":s//X/: no previous substitution".into())
    );
    assert_eq!(
        ex(&mut h, "echo x!!:s/b/Q/:&"),
        Err(":s/b/Q/:&: substitution failed".into())
    );
    // `:&` repeats `s/a/A/`, and no `a` is left.
    assert_eq!(
        ex(&mut h, "!!:s/a/A/:&"),
        Err(":s/a/A/:&: substitution failed".into())
    );
    assert_eq!(
        ex(&mut h, "echo !!: x"),
        Err(" : unrecognized history modifier".into())
    );
    let mut h = history(&["echo echo X b"]);
    assert_eq!(
        ex(&mut h, "!echo:1:s/a/b"),
        Err(":s/a/b: substitution failed".into())
    );
    assert_eq!(ex(&mut h, "!!:gs/b/&&/").as_deref(), Ok("echo echo X bb"));
}

#[test]
fn cmdhist_joins_the_lines_of_one_command() {
    let mut e = String::new();
    for l in ["for i in 1 2", "do echo $i", "done"] {
        join_lines(&mut e, l);
    }
    assert_eq!(e, "for i in 1 2; do echo $i; done");
    let mut e = String::new();
    for l in ["if true", "then", "echo y", "fi"] {
        join_lines(&mut e, l);
    }
    assert_eq!(e, "if true; then echo y; fi");
    let mut e = String::new();
    for l in ["echo a \\", "b"] {
        join_lines(&mut e, l);
    }
    assert_eq!(e, "echo a b");
    let mut e = String::new();
    for l in ["echo \"a", "b\""] {
        join_lines(&mut e, l);
    }
    assert_eq!(e, "echo \"a\nb\"");
    let mut e = String::new();
    for l in ["ls |", "wc -l"] {
        join_lines(&mut e, l);
    }
    assert_eq!(e, "ls | wc -l");
}

#[test]
fn odd_input_never_panics() {
    let mut h = history(&["echo a b", "x"]);
    for line in [
        "!",
        "!!:",
        "!!:s",
        "!!:s/",
        "!!:gs",
        "!?",
        "!??",
        "!-",
        "!--1",
        "!99999999999999999999",
        "!!:99999999999999999999",
        "^",
        "^^",
        "'!!",
        "\"!!",
        "\\",
        "!!:1-$",
        "!:-",
        "!é",
        "é!!",
    ] {
        let _ = expand(line, &mut h, false);
        let _ = expand(line, &mut h, true);
    }
}

#[test]
fn random_lines_of_history_syntax_never_panic() {
    let alphabet: Vec<char> = "!!!^$*:-%?#'\"\\ s/&gGhtrepqx0129a(){}[]=é\n"
        .chars()
        .collect();
    let mut h = history(&["echo a.b/c d", "x", "ls -l | wc -c > f; cat 'q r'"]);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        let mut line = String::new();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        for k in 0..(seed % 24) {
            let r = seed.rotate_left(k as u32 * 5);
            line.push(alphabet[(r % alphabet.len() as u64) as usize]);
        }
        if let Ok(e) = expand(&line, &mut h, seed & 1 == 0) {
            assert!(e.line.len() <= MAX_EXPANSION, "{line:?}");
        }
    }
}

#[test]
fn an_expansion_is_bounded() {
    let mut h = history(&["echo a"]);
    // Each `!#` doubles the line: 64 of them would ask for exabytes.
    let doubling = "x ".to_string() + &"!# ".repeat(64);
    let err = ex(&mut h, &doubling);
    assert_eq!(
        err,
        Err(format!(
            "!#: history expansion longer than {MAX_EXPANSION} bytes"
        ))
    );
    let mut h = history(&[&"y".repeat(1 << 20)]);
    assert!(ex(&mut h, &"!! ".repeat(8)).is_err());
    assert_eq!(ex(&mut h, "!! !!").map(|l| l.len()), Ok((2 << 20) + 1));
    // A global substitution that would grow the entry past the bound says so first.
    let big_new = "z".repeat(100);
    assert_eq!(
        ex(&mut h, &format!("!!:gs/y/{big_new}/")).map(|l| l.len()),
        Err(format!(
            ":gs/y/{big_new}/: history expansion longer than {MAX_EXPANSION} bytes"
        ))
        .map(|l: String| l.len())
    );
}
