//! Bash-like scripts from a grammar: every construct the interpreter has, nested to a
//! bounded depth, with the values that break code (edge numbers, empty strings, globs,
//! patterns, huge widths and ranges).
//!
//! Scripts are mostly well-formed, so they reach the interpreter rather than stopping in
//! the parser; [`super::mutate`] takes care of the malformed ones. Loops mostly end on
//! their own; a few never do and are stopped by the case's cancellation.

use super::rng::Rng;

/// Deepest nesting the generator builds by default. Deeper scripts overflow the stack
/// until the interpreter bounds nesting (see `deep_nesting_regressions`).
pub const MAX_NESTING: usize = 30;

/// Numbers that break arithmetic, slicing, widths and ranges.
pub const EDGE_NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "63",
    "64",
    "65",
    "-64",
    "255",
    "256",
    "-256",
    "4096",
    "65536",
    "2147483647",
    "-2147483648",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551616",
    "99999999999999999999999",
    "0x7fffffffffffffff",
    "0xffffffffffffffff",
    "0x",
    "010",
    "08",
    "2#1010",
    "64#_@",
    "65#1",
    "1#0",
    "0#1",
    "36#zz",
    "1e9",
    "1e308",
    "inf",
    "nan",
    "-1.5",
    "",
    " ",
    "x",
    "a[1]",
];

const VARS: &[&str] = &["x", "y", "n", "s", "IFS", "PWD", "HOME", "a", "b", "_", "i"];

const LITERALS: &[&str] = &[
    "a",
    "b",
    "foo",
    "hello world",
    "-n",
    "-e",
    "--",
    "-",
    "*",
    "?",
    "*.txt",
    "/*",
    "/*/*",
    "**",
    "[",
    "]",
    "[a-z]*",
    "[!a]*",
    "[z-a]",
    "[[:alpha:]]",
    "[[:nope:]]",
    "\\*",
    "~",
    "~u",
    "~/x",
    "~-",
    "/",
    ".",
    "..",
    "../..",
    "/dev/null",
    "/dev/zero",
    "/tmp",
    "/tmp/f",
    "f",
    "d/e",
    "é",
    "日本",
    "%",
    "%s",
    "%d",
    "=",
    "a=b",
    "{",
    "}",
    "!",
    "#",
    "\\",
];

const PATTERNS: &[&str] = &[
    "*",
    "?",
    "a",
    "a*",
    "*a",
    "[ab]",
    "[!a]",
    "[",
    "\\",
    "**",
    "*?*",
    "[z-a]",
    "é",
    "\"\"",
    "''",
    "[[:digit:]]",
    "?(a)",
    "@(a|b)",
    "*(x)",
];

const REGEXES: &[&str] = &[
    "a",
    "^a.*$",
    "(a|b)+",
    "(",
    "[",
    "a{2,3}",
    "a{99999}",
    "(a*)*b",
    "\\",
    "[[:alpha:]]+",
    "x|",
    ".*",
    "é+",
];

const PRINTF_FORMATS: &[&str] = &[
    "%s\\n",
    "%d\\n",
    "%5s|%-5s|",
    "%*d",
    "%-*d",
    "%.*s",
    "%1000000000d",
    "%99999999999999999999d",
    "%.9999f",
    "%b",
    "%q",
    "%c",
    "%x %o %X",
    "%e %g %f",
    "%'d",
    "%n",
    "%",
    "%z",
    "\\x",
    "\\u12345678",
    "\\0377",
    "%10\\$s",
    "%s%s%s%s",
    "%#x",
    "%+05d",
];

const COMMANDS: &[&str] = &[
    "echo",
    "echo -n",
    "echo -e",
    "printf",
    "true",
    "false",
    ":",
    "test",
    "cat",
    "head -n",
    "head -c",
    "tail -n",
    "tail -c",
    "wc",
    "wc -l",
    "sort",
    "sort -n",
    "sort -r",
    "uniq",
    "uniq -c",
    "cut -c",
    "cut -d: -f",
    "tr a-z A-Z",
    "tr -d",
    "grep",
    "grep -E",
    "grep -v",
    "grep -c",
    "sed",
    "seq",
    "ls",
    "ls -la",
    "mkdir -p",
    "rm -rf",
    "rmdir",
    "cp -r",
    "mv",
    "touch",
    "ln -s",
    "readlink -f",
    "stat",
    "basename",
    "env",
    "xargs",
    "xargs -n",
    "tee",
    "du",
    "df",
    "date",
    "sleep",
    "yes",
    "sum",
    "chmod",
    "which",
    "help",
    "type",
    "command -v",
    "read",
    "read -r",
    "read -a",
    "read -n",
    "read -d",
    "cd",
    "pwd",
    "export",
    "unset",
    "unset -f",
    "local",
    "declare",
    "declare -i",
    "declare -a",
    "readonly",
    "set",
    "set --",
    "shift",
    "let",
    "wait",
    "trap",
    "alias",
    "snapshot",
    "return",
    "break",
    "continue",
    "exec",
    "nosuchcommand",
    "/bin/sh -c",
    "sh -c",
    "bash -c",
    "eval",
    "source",
    ".",
    "date -d",
    "touch -d",
    "date -r",
    "uniq -f",
    "uniq -s",
    "uniq -w",
    "sort -k",
    "seq -w",
];

const SED_SCRIPTS: &[&str] = &[
    "s/a/b/g",
    "s/a*/x/2",
    "1d",
    "$!N",
    "s/(/x/",
    "y/abc/xyz/",
    "s/\\(a\\)/\\1\\1/",
    "/a/,/b/p",
    "n;d",
    "s/x/\\n/",
    "q5",
    "s",
    "{",
    "w /tmp/sedout",
];

const OPTIONS: &[&str] = &[
    "-e",
    "+e",
    "-u",
    "+u",
    "-o pipefail",
    "-x",
    "+x",
    "-f",
    "+f",
    "-C",
    "-v",
    "-o nosuchoption",
];

/// Sets the generator's variables to values worth slicing, matching and counting.
const PRELUDE: &str = "x=hello; y='a b  c'; n=5; s=/w/a.txt; b=é日本; i=2; \
a=(zero one 'two three' '' four); set -- p1 'p 2' p3\n";

/// State of one script being generated.
pub struct Gen<'r> {
    rng: &'r mut Rng,
    depth: usize,
    max_depth: usize,
    /// Unique suffixes for here-document delimiters, loop counters and sourced files.
    serial: usize,
    /// Files written by this script that `source` may read.
    sourced: Vec<String>,
    /// Constructs left to build: nesting multiplies, so without this bound a script at
    /// depth 8 could reach gigabytes. At zero, everything is a leaf.
    fuel: usize,
}

/// Constructs in one script (statements, words, expressions): scripts of a few KB.
const FUEL: usize = 250;

/// One generated statement; a here-document must be followed by a newline, not `;`.
struct Stmt {
    text: String,
    heredoc: bool,
}

impl<'r> Gen<'r> {
    pub fn new(rng: &'r mut Rng, max_depth: usize) -> Gen<'r> {
        Gen {
            rng,
            depth: 0,
            max_depth: max_depth.min(MAX_NESTING),
            serial: 0,
            sourced: Vec::new(),
            fuel: FUEL,
        }
    }

    fn next_serial(&mut self) -> usize {
        self.serial += 1;
        self.serial
    }

    /// True when the next construct must be a leaf; otherwise spends one unit of fuel.
    fn deep(&mut self) -> bool {
        if self.depth >= self.max_depth || self.fuel == 0 {
            return true;
        }
        self.fuel -= 1;
        false
    }

    /// A whole script: a few statements, sometimes preceded by function definitions.
    pub fn script(&mut self) -> String {
        let mut out = String::new();
        if !self.rng.one_in(4) {
            // Values for the expansions to work on: unset variables reach little code.
            out.push_str(PRELUDE);
        }
        if self.rng.one_in(3) {
            out.push_str(&format!("set {}\n", self.rng.pick(OPTIONS)));
        }
        for _ in 0..self.rng.range(0, 2) {
            let f = self.function_def();
            out.push_str(&f);
            out.push('\n');
        }
        let n = self.rng.range(1, 6);
        out.push_str(&self.list(n));
        out.push('\n');
        out
    }

    /// `n` statements, joined and terminated so the list can be closed by `}`, `)`,
    /// `done`, `fi`, `;;` or `esac` (it always ends in `;` or a newline).
    fn list(&mut self, n: usize) -> String {
        let mut out = String::new();
        for i in 0..n.max(1) {
            let s = self.stmt();
            out.push_str(&s.text);
            let last = i + 1 == n.max(1);
            if s.heredoc {
                out.push('\n');
            } else if last {
                out.push_str(if self.rng.one_in(2) { ";" } else { "\n" });
            } else {
                out.push_str(self.rng.pick(&[";", "\n", " && ", " || ", " & ", ";\n"]));
            }
        }
        out
    }

    /// A short list for a nested body: fewer statements the deeper we are.
    fn body(&mut self) -> String {
        let n = if self.deep() { 1 } else { self.rng.range(1, 3) };
        self.list(n)
    }

    fn stmt(&mut self) -> Stmt {
        self.depth += 1;
        let s = if self.rng.one_in(9) {
            self.heredoc_stmt()
        } else if self.rng.one_in(12) {
            Stmt {
                text: self.function_def(),
                heredoc: false,
            }
        } else {
            Stmt {
                text: self.pipeline(),
                heredoc: false,
            }
        };
        self.depth -= 1;
        s
    }

    fn pipeline(&mut self) -> String {
        let mut out = String::new();
        if self.rng.one_in(10) {
            out.push_str("! ");
        }
        if self.rng.one_in(20) {
            out.push_str("time -p ");
        }
        let stages = if self.rng.one_in(4) {
            self.rng.range(2, 4)
        } else {
            1
        };
        for i in 0..stages {
            if i > 0 {
                out.push_str(if self.rng.one_in(5) { " |& " } else { " | " });
            }
            out.push_str(&self.command());
        }
        out
    }

    fn command(&mut self) -> String {
        if self.deep() || self.rng.one_in(2) {
            let mut c = self.simple();
            if self.rng.one_in(4) {
                c.push_str(&self.redirections());
            }
            return c;
        }
        let c = match self.rng.below(13) {
            0 => format!("{{ {} }}", self.body()),
            1 => format!("( {} )", self.body()),
            2 => self.if_cmd(),
            3 => self.while_cmd(),
            4 => self.for_cmd(),
            5 => self.arith_for(),
            6 => self.case_cmd(),
            7 => format!("[[ {} ]]", self.cond_expr()),
            8 => format!("(( {} ))", self.arith()),
            9 => self.eval_cmd(),
            10 => self.source_cmd(),
            11 => self.shell_c(),
            _ => self.assignment(),
        };
        if self.rng.one_in(5) {
            format!("{c}{}", self.redirections())
        } else {
            c
        }
    }

    fn simple(&mut self) -> String {
        let mut out = String::new();
        if self.rng.one_in(6) {
            out.push_str(&self.assignment());
            out.push(' ');
            if self.rng.one_in(2) {
                return out.trim_end().to_string();
            }
        }
        let name = self.rng.pick(COMMANDS);
        out.push_str(name);
        for _ in 0..self.rng.range(0, 3) {
            out.push(' ');
            out.push_str(&self.arg_for(name));
        }
        out
    }

    /// An argument that suits the command often enough to get past its flag parsing.
    fn arg_for(&mut self, name: &str) -> String {
        if self.rng.one_in(3) {
            return self.word();
        }
        match name {
            "printf" => quote_single(self.rng.pick(PRINTF_FORMATS)),
            "sed" => quote_single(self.rng.pick(SED_SCRIPTS)),
            "grep" | "grep -E" | "grep -v" | "grep -c" => quote_single(self.rng.pick(REGEXES)),
            "date -d" | "touch -d" => format!("@{}", self.rng.pick(EDGE_NUMBERS).trim()),
            "head -n" | "head -c" | "tail -n" | "tail -c" | "seq" | "shift" | "return"
            | "break" | "continue" | "sleep" | "cut -c" | "cut -d: -f" | "xargs -n" | "read -n"
            | "uniq -f" | "uniq -s" | "uniq -w" | "sort -k" | "seq -w" => {
                if name == "sleep" {
                    self.rng
                        .pick(&["0", "0.001", "-1", "x", "1e-9"])
                        .to_string()
                } else {
                    quote_single(self.rng.pick(EDGE_NUMBERS))
                }
            }
            "let" | "declare -i" => quote_single(&format!("x={}", self.arith())),
            "set" => self.rng.pick(OPTIONS).to_string(),
            "sh -c" | "bash -c" | "/bin/sh -c" | "eval" => {
                let inner = self.nested_script();
                quote_single(&inner)
            }
            "source" | "." => self.sourced_path(),
            "cd" | "ls" | "ls -la" | "stat" | "du" | "mkdir -p" | "rm -rf" | "touch" | "cat"
            | "rmdir" | "readlink -f" | "date -r" => self.rng.pick(PATHS).to_string(),
            _ => self.word(),
        }
    }

    fn nested_script(&mut self) -> String {
        self.depth += 1;
        let s = self.body();
        self.depth -= 1;
        s
    }

    fn sourced_path(&mut self) -> String {
        if !self.sourced.is_empty() && !self.rng.one_in(4) {
            let i = self.rng.below(self.sourced.len());
            return self.sourced[i].clone();
        }
        self.rng.pick(SOURCE_PATHS).to_string()
    }

    fn assignment(&mut self) -> String {
        let var = self.rng.pick(VARS);
        match self.rng.below(9) {
            0 => format!("{var}=({} {})", self.word(), self.word()),
            1 => format!("{var}[{}]={}", self.rng.pick(EDGE_NUMBERS), self.word()),
            2 => format!("{var}+={}", self.word()),
            3 => format!("{var}=$(( {} ))", self.arith()),
            4 => format!("{var}+=({})", self.word()),
            5 => format!("{var}="),
            _ => format!("{var}={}", self.word()),
        }
    }

    fn redirections(&mut self) -> String {
        let mut out = String::new();
        for _ in 0..self.rng.range(1, 2) {
            let r = match self.rng.below(16) {
                0 => format!(" > {}", self.rng.pick(PATHS)),
                1 => format!(" >> {}", self.rng.pick(PATHS)),
                2 => format!(" < {}", self.rng.pick(PATHS)),
                3 => " 2>&1".to_string(),
                4 => " >&2".to_string(),
                5 => " 2>/dev/null".to_string(),
                6 => format!(" <<< {}", self.word()),
                7 => format!(" &> {}", self.rng.pick(PATHS)),
                8 => " >| /tmp/f".to_string(),
                9 => " 3>&1".to_string(),
                10 => " <&-".to_string(),
                11 => " >&-".to_string(),
                12 => " 9> /tmp/nine".to_string(),
                13 => " <> /tmp/f".to_string(),
                14 => format!(" {}>&1", self.rng.pick(&["0", "2", "10", "99999999999"])),
                _ => format!(" > {}", self.word()),
            };
            out.push_str(&r);
        }
        out
    }

    fn heredoc_stmt(&mut self) -> Stmt {
        let n = self.next_serial();
        let delim = format!("EOF{n}");
        let (op, open) = match self.rng.below(4) {
            0 => ("<<-", delim.clone()),
            1 => ("<<", format!("'{delim}'")),
            2 => ("<<", format!("\"{delim}\"")),
            _ => ("<<", delim.clone()),
        };
        let mut body = String::new();
        for _ in 0..self.rng.range(0, 3) {
            if op == "<<-" {
                body.push('\t');
            }
            body.push_str(&self.heredoc_line());
            body.push('\n');
        }
        if self.rng.one_in(4) && !self.deep() {
            // A script written now, sourced or run later in this script.
            // Pushed after its body is made, so no file sources itself: recursion through
            // `source` overflows the stack today (see `recursion_regressions`).
            let path = format!("/tmp/s{n}.sh");
            let inner = self.nested_script();
            self.sourced.push(path.clone());
            return Stmt {
                text: format!("cat > {path} <<'{delim}'\n{inner}\n{delim}"),
                heredoc: true,
            };
        }
        let cmd = self.rng.pick(&[
            "cat",
            "read x",
            "wc -l",
            "sh",
            "tr a b",
            "while read l; do echo \"$l\"; done",
        ]);
        Stmt {
            text: format!("{cmd} {op}{open}\n{body}{delim}"),
            heredoc: true,
        }
    }

    fn heredoc_line(&mut self) -> String {
        match self.rng.below(6) {
            0 => "plain text line".to_string(),
            1 => "$x and ${y:-d} and $((1+2))".to_string(),
            2 => "$(echo sub)".to_string(),
            3 => "\\$not \\` `echo bq`".to_string(),
            4 => self.word(),
            _ => String::new(),
        }
    }

    fn if_cmd(&mut self) -> String {
        let mut out = format!("if {}then {}", self.body(), self.body());
        if self.rng.one_in(3) {
            out.push_str(&format!("elif {}then {}", self.body(), self.body()));
        }
        if self.rng.one_in(2) {
            out.push_str(&format!("else {}", self.body()));
        }
        out.push_str("fi");
        out
    }

    fn while_cmd(&mut self) -> String {
        let n = self.next_serial();
        let kw = if self.rng.one_in(3) { "until" } else { "while" };
        if self.rng.one_in(15) {
            // Never ends on its own: the case's cancellation stops it.
            return format!("while :; do {}done", self.body());
        }
        let limit = self.rng.range(0, 5);
        let cond = if kw == "while" {
            format!("(( c{n}++ < {limit} ))")
        } else {
            format!("(( c{n}++ >= {limit} ))")
        };
        format!("{kw} {cond}; do {}done", self.body())
    }

    fn for_cmd(&mut self) -> String {
        let var = self.rng.pick(VARS);
        let mut words = String::new();
        for _ in 0..self.rng.range(0, 4) {
            words.push(' ');
            words.push_str(&self.word());
        }
        if self.rng.one_in(6) {
            format!("for {var}; do {}done", self.body())
        } else {
            format!("for {var} in{words}; do {}done", self.body())
        }
    }

    fn arith_for(&mut self) -> String {
        let n = self.next_serial();
        let limit = self.rng.range(0, 5);
        match self.rng.below(5) {
            0 => format!("for ((;;)); do {}break; done", self.body()),
            1 => format!(
                "for (( {} ; {} ; {} )); do {}done",
                self.arith(),
                "0",
                self.arith(),
                self.body()
            ),
            _ => format!(
                "for ((k{n}=0; k{n}<{limit}; k{n}++)); do {}done",
                self.body()
            ),
        }
    }

    fn case_cmd(&mut self) -> String {
        let mut out = format!("case {} in ", self.word());
        for _ in 0..self.rng.range(1, 3) {
            let mut pats = self.rng.pick(PATTERNS).to_string();
            if self.rng.one_in(3) {
                pats.push('|');
                pats.push_str(self.rng.pick(PATTERNS));
            }
            let term = self.rng.pick(&[";;", ";&", ";;&"]);
            let body = self.body();
            let body = body.strip_suffix(';').unwrap_or(&body);
            out.push_str(&format!("{pats}) {body}{term} "));
        }
        out.push_str("esac");
        out
    }

    fn function_def(&mut self) -> String {
        let name = self.rng.pick(&["f", "g", "h", "echo", "cd", "a.b"]);
        let body = self.body();
        if self.rng.one_in(3) {
            format!("function {name} {{ {body} }}")
        } else if self.rng.one_in(4) {
            format!("{name}() ( {body} )")
        } else {
            format!("{name}() {{ local v=$1; {body} }}")
        }
    }

    fn eval_cmd(&mut self) -> String {
        let inner = self.nested_script();
        match self.rng.below(3) {
            0 => format!("eval {}", quote_single(&inner)),
            1 => format!("eval \"{}\"", quote_double(&inner)),
            _ => format!("eval \"$(printf '%s' {})\"", quote_single(&inner)),
        }
    }

    fn source_cmd(&mut self) -> String {
        let n = self.next_serial();
        let inner = self.nested_script();
        let path = format!("/tmp/src{n}.sh");
        let run = self.rng.pick(&["source", ".", "sh", "bash"]);
        format!(
            "printf '%s\\n' {} > {path}; {run} {path} {}",
            quote_single(&inner),
            self.word()
        )
    }

    fn shell_c(&mut self) -> String {
        let inner = self.nested_script();
        let sh = self.rng.pick(&["sh", "bash", "/bin/sh", "/usr/bin/env sh"]);
        format!("{sh} -c {} arg0 {}", quote_single(&inner), self.word())
    }

    /// A `[[ … ]]` expression.
    fn cond_expr(&mut self) -> String {
        if self.deep() || self.rng.one_in(2) {
            return match self.rng.below(8) {
                0 => format!("{} == {}", self.word(), self.rng.pick(PATTERNS)),
                1 => format!("{} != {}", self.word(), self.rng.pick(PATTERNS)),
                2 => format!("{} =~ {}", self.word(), self.rng.pick(REGEXES)),
                3 => format!(
                    "{} {} {}",
                    quote_single(self.rng.pick(EDGE_NUMBERS)),
                    self.rng.pick(&["-eq", "-lt", "-ge", "-ne"]),
                    quote_single(self.rng.pick(EDGE_NUMBERS))
                ),
                4 => format!(
                    "{} {}",
                    self.rng
                        .pick(&["-f", "-d", "-e", "-z", "-n", "-s", "-x", "-v", "-L", "-t"]),
                    self.word()
                ),
                5 => format!("{} < {}", self.word(), self.word()),
                6 => format!("{} -nt {}", self.word(), self.word()),
                _ => self.word(),
            };
        }
        self.depth += 1;
        let e = match self.rng.below(4) {
            0 => format!("! {}", self.cond_expr()),
            1 => format!("( {} )", self.cond_expr()),
            2 => format!("{} && {}", self.cond_expr(), self.cond_expr()),
            _ => format!("{} || {}", self.cond_expr(), self.cond_expr()),
        };
        self.depth -= 1;
        e
    }

    /// An arithmetic expression.
    pub fn arith(&mut self) -> String {
        if self.deep() || self.rng.one_in(3) {
            return match self.rng.below(6) {
                0 | 1 => self
                    .rng
                    .pick(EDGE_NUMBERS)
                    .trim()
                    .to_string()
                    .replace('x', "1"),
                2 => self.rng.pick(VARS).to_string(),
                3 => format!(
                    "a[{}]",
                    self.rng.pick(&["0", "-1", "9223372036854775807", "i"])
                ),
                4 => format!("${}", self.rng.pick(VARS)),
                _ => format!("$(echo {})", self.rng.range(0, 9)),
            };
        }
        self.depth += 1;
        let e = match self.rng.below(6) {
            0 => format!(
                "{} {} {}",
                self.arith(),
                self.rng.pick(&[
                    "+", "-", "*", "/", "%", "**", "<<", ">>", "&", "|", "^", "&&", "||", "<", ">",
                    "<=", ">=", "==", "!=", ","
                ]),
                self.arith()
            ),
            1 => format!(
                "{} {} {}",
                self.rng.pick(VARS),
                self.rng.pick(&[
                    "=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="
                ]),
                self.arith()
            ),
            2 => format!(
                "{}{}",
                self.rng.pick(&["-", "+", "!", "~", "++", "--"]),
                self.rng.pick(VARS)
            ),
            3 => format!("{} ? {} : {}", self.arith(), self.arith(), self.arith()),
            4 => format!("( {} )", self.arith()),
            _ => format!("{}{}", self.rng.pick(VARS), self.rng.pick(&["++", "--"])),
        };
        self.depth -= 1;
        e
    }

    /// One shell word: literals, quotes, parameter expansions, substitutions, braces.
    pub fn word(&mut self) -> String {
        if self.deep() {
            return shell_escape(self.rng.pick(LITERALS));
        }
        self.depth += 1;
        let w = match self.rng.below(16) {
            0..=3 => shell_escape(self.rng.pick(LITERALS)),
            4 => quote_single(self.rng.pick(LITERALS)),
            5 => format!("\"{}\"", self.dq_content()),
            6 => format!(
                "$'{}'",
                self.rng.pick(&[
                    "\\x41\\n",
                    "\\u00e9",
                    "\\0",
                    "\\c",
                    "\\xff",
                    "\\U0010ffff",
                    "\\777",
                    "a\\'b"
                ])
            ),
            7 | 8 => self.param(),
            9 => format!("$(( {} ))", self.arith()),
            10 => format!("$( {} )", self.body()),
            11 => format!("`{}`", self.simple().replace('`', "")),
            12 => self.brace(),
            13 => format!("{}{}", self.param(), shell_escape(self.rng.pick(LITERALS))),
            14 => format!("\"$( {} )\"", self.body()),
            _ => format!(
                "${}",
                self.rng
                    .pick(&["@", "*", "#", "?", "$", "!", "-", "0", "1", "9"])
            ),
        };
        self.depth -= 1;
        w
    }

    fn dq_content(&mut self) -> String {
        let mut s = String::new();
        for _ in 0..self.rng.range(0, 3) {
            match self.rng.below(4) {
                0 => s.push_str(&quote_double(self.rng.pick(LITERALS))),
                1 => s.push_str(&self.param()),
                2 => s.push_str(&format!("$(( {} ))", self.arith())),
                _ => s.push_str(&format!("$( {} )", self.body())),
            }
        }
        s
    }

    /// A parameter expansion.
    fn param(&mut self) -> String {
        let v = self.rng.pick(VARS);
        if self.deep() {
            return format!("${v}");
        }
        self.depth += 1;
        let p = match self.rng.below(22) {
            0 => format!("${v}"),
            1 => format!("${{{v}}}"),
            2 => format!("${{{v}:-{}}}", self.word()),
            3 => format!("${{{v}:={}}}", self.word()),
            4 => format!("${{{v}:?{}}}", self.word()),
            5 => format!("${{{v}:+{}}}", self.word()),
            6 => format!("${{#{v}}}"),
            7 => format!("${{{v}#{}}}", self.rng.pick(PATTERNS)),
            8 => format!("${{{v}%%{}}}", self.rng.pick(PATTERNS)),
            9 => format!("${{{v}//{}/{}}}", self.rng.pick(PATTERNS), self.word()),
            10 => format!("${{{v}/#{}/{}}}", self.rng.pick(PATTERNS), self.word()),
            11 => format!("${{{v}/%{}/}}", self.rng.pick(PATTERNS)),
            12 => format!("${{{v}:{}:{}}}", self.slice_number(), self.slice_number()),
            13 => format!("${{{v}:{}}}", self.slice_number()),
            14 => format!("${{{v}^^}}"),
            15 => format!("${{{v},}}"),
            16 => format!("${{!{v}}}"),
            17 => format!("${{{v}[@]}}"),
            18 => format!("${{{v}[{}]}}", self.rng.pick(EDGE_NUMBERS)),
            19 => format!("${{#{v}[@]}}"),
            20 => format!(
                "${{{}:{}:{}}}",
                self.rng.pick(&["@", "a[@]", "*"]),
                self.slice_number(),
                self.slice_number()
            ),
            _ => format!(
                "${{{v}@{}}}",
                self.rng
                    .pick(&["Q", "U", "L", "u", "E", "P", "A", "K", "a"])
            ),
        };
        self.depth -= 1;
        p
    }

    /// An offset or length of `${x:N:M}`; spaces keep `-1` from meaning `:-`.
    fn slice_number(&mut self) -> String {
        let n = self.rng.pick(EDGE_NUMBERS);
        if n.starts_with('-') {
            format!(" {n}")
        } else if n.is_empty() || n.contains(' ') || n.contains('#') {
            "0".to_string()
        } else {
            n.to_string()
        }
    }

    fn brace(&mut self) -> String {
        match self.rng.below(9) {
            0 => "{a,b,c}".to_string(),
            1 => format!(
                "{{1..{}}}",
                self.rng.pick(&[
                    "5",
                    "1000",
                    "99999999",
                    "9223372036854775807",
                    "-9223372036854775808"
                ])
            ),
            2 => format!(
                "{{{}..{}..{}}}",
                self.rng.pick(&[
                    "1",
                    "-5",
                    "9223372036854775806",
                    "-9223372036854775807",
                    "0"
                ]),
                self.rng
                    .pick(&["9", "9223372036854775807", "-9223372036854775808", "3"]),
                self.rng.pick(&[
                    "1",
                    "2",
                    "-3",
                    "0",
                    "9223372036854775807",
                    "-9223372036854775808",
                    "4294967297"
                ])
            ),
            3 => format!(
                "{{{}..{}..{}}}",
                self.rng.pick(&["a", "z", "A", "é", "\\x00"]),
                self.rng.pick(&["a", "z", "Z", "ÿ"]),
                self.rng
                    .pick(&["1", "-2", "4294967295", "4294967296", "9223372036854775807"])
            ),
            4 => "{z..a}".to_string(),
            5 => "{,}".to_string(),
            6 => "{a,{b,c}}{1..3}".to_string(),
            7 => "{{a,b},{c,d}}x{1..3}y{e,f}".to_string(),
            _ => "{a..c}{a..c}{a..c}{a..c}{a..c}{a..c}{a..c}{a..c}{a..c}{a..c}{a..c}{a..c}{a..c}"
                .to_string(),
        }
    }
}

const PATHS: &[&str] = &[
    "/",
    ".",
    "..",
    "/tmp",
    "/tmp/f",
    "/tmp/g",
    "/tmp/d/e",
    "f",
    "d",
    "/home/u",
    "/etc/passwd",
    "/w/a.txt",
    "/w",
    "/nope",
    "/dev/null",
    "/dev/zero",
    "/dev/urandom",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/fd/1",
    "/dev/fd/9",
    "",
    "''",
    "/tmp/*",
    "/proc/self",
    "../../..",
];

/// What `source` reads when it reads none of this script's files: no globs, which could
/// name a file that sources itself (see `recursion_regressions`).
const SOURCE_PATHS: &[&str] = &[
    "/nope",
    "/w/a.txt",
    "/w/bin.dat",
    "/etc/passwd",
    "/dev/null",
    "/dev/stdin",
    "",
    "/tmp",
    "/d/e",
];

/// Scripts nested `depth` levels deep, one construct per kind; `depth` above
/// [`MAX_NESTING`] is for the ignored regression tests only.
pub fn nested(kind: usize, depth: usize) -> String {
    let d = depth;
    match kind % 12 {
        0 => format!("{}true{}", "{ ".repeat(d), "; }".repeat(d)),
        1 => format!("{}true{}", "( ".repeat(d), " )".repeat(d)),
        2 => format!("echo {}x{}", "$(echo ".repeat(d), ")".repeat(d)),
        3 => format!("echo \"{}x{}\"", "$(echo \"".repeat(d), "\")".repeat(d)),
        4 => format!("echo $(( {}1{} ))", "( ".repeat(d), " )".repeat(d)),
        5 => format!("{}true{}", "if true; then ".repeat(d), "; fi".repeat(d)),
        6 => format!("{}true{}", "while false; do ".repeat(d), "; done".repeat(d)),
        7 => format!("echo {}x{}", "${x:-".repeat(d), "}".repeat(d)),
        8 => format!("[[ {}a{} ]]", "( ".repeat(d), " )".repeat(d)),
        9 => {
            // Each level evals the one below; quoting each level inside the next would
            // grow the script fourfold per level.
            let mut s = "e0=true\n".to_string();
            for i in 1..=d {
                s.push_str(&format!("e{i}='eval \"$e{}\"'\n", i - 1));
            }
            s.push_str(&format!("eval \"$e{d}\"\n"));
            s
        }
        10 => {
            let mut s = String::new();
            for i in 0..d {
                s.push_str(&format!("f{i}() {{ f{}; }}\n", i + 1));
            }
            s.push_str(&format!("f{d}() {{ true; }}\nf0\n"));
            s
        }
        _ => format!("echo {}a{}", "{x,".repeat(d), "}".repeat(d)),
    }
}

/// `s` as one single-quoted shell word.
pub fn quote_single(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `s` escaped for the inside of double quotes.
fn quote_double(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `s` as one unquoted word: spaces escaped, glob characters left active.
fn shell_escape(s: &str) -> String {
    if s.is_empty() {
        return "''".to_string();
    }
    let mut out = String::new();
    for c in s.chars() {
        if matches!(
            c,
            ' ' | ';' | '&' | '|' | '<' | '>' | '(' | ')' | '\'' | '"' | '`' | '#' | '$'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
