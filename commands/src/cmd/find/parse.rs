//! `find`'s command line: leading options, starting points, and the expression, parsed into
//! a [`Plan`] the walker evaluates. Errors are GNU's words (without the `find: ` prefix).

use std::time::SystemTime;

use super::pattern::{PathRegex, REGEX_TYPES, RegexType, compile_regex};
use crate::fs::FileKind;

/// How a comparison operand was written: `+N`, `-N` or `N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Lt,
    Eq,
    Gt,
}

impl Cmp {
    pub(crate) fn holds(self, value: u64, n: u64) -> bool {
        match self {
            Cmp::Lt => value < n,
            Cmp::Eq => value == n,
            Cmp::Gt => value > n,
        }
    }
}

/// How `-perm` compares: `MODE` exactly, `-MODE` all bits, `/MODE` any bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PermHow {
    Exact,
    All,
    Any,
}

/// Which symlinks the walk follows (`-P`, `-H`, `-L`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Follow {
    Never,
    StartingPoints,
    Always,
}

/// One piece of a `-printf` format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    Lit(Vec<u8>),
    /// `\c`: stop printing this format (and flush).
    Stop,
    Dir {
        left: bool,
        alt: bool,
        width: Option<usize>,
        prec: Option<usize>,
        kind: char,
        /// The time field for `%T`, `%A`, `%C`, `%B`.
        sub: Option<char>,
    },
}

/// A test or action of the expression.
#[derive(Debug)]
pub(crate) enum Test {
    True,
    False,
    Name {
        pat: String,
        icase: bool,
    },
    Path {
        pat: String,
        icase: bool,
    },
    Lname {
        pat: String,
        icase: bool,
    },
    Regex(PathRegex),
    Type(Vec<FileKind>),
    XType(Vec<FileKind>),
    Size {
        cmp: Cmp,
        n: u64,
        unit: u64,
    },
    /// Age of the modification time in whole `unit` seconds (`-mtime`, `-mmin`).
    Age {
        cmp: Cmp,
        n: u64,
        unit: u64,
    },
    Newer(SystemTime),
    Perm {
        mode: u32,
        how: PermHow,
    },
    /// `-user`/`-group` of the session user (the only owner in a fork): `true` matches.
    Owner(bool),
    Empty,
    Access(u32),
    Print {
        out: Option<usize>,
        zero: bool,
    },
    Printf {
        out: Option<usize>,
        fmt: Vec<Piece>,
    },
    Ls {
        out: Option<usize>,
    },
    Delete,
    Prune,
    Quit,
    Exec(usize),
}

impl Test {
    /// Whether answering it takes more of an entry than its path and kind (its size,
    /// times, mode, link target, or contents).
    fn reads_metadata(&self) -> bool {
        !matches!(
            self,
            Test::True
                | Test::False
                | Test::Name { .. }
                | Test::Path { .. }
                | Test::Regex(_)
                | Test::Type(_)
                | Test::Owner(_)
                | Test::Print { .. }
                | Test::Delete
                | Test::Prune
                | Test::Quit
                | Test::Exec(_)
        )
    }

    fn is_action(&self) -> bool {
        matches!(
            self,
            Test::Print { .. }
                | Test::Printf { .. }
                | Test::Ls { .. }
                | Test::Delete
                | Test::Quit
                | Test::Exec(_)
        )
    }
}

#[derive(Debug)]
pub(crate) enum Expr {
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Comma(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Test(Test),
}

impl Expr {
    fn reads_metadata(&self) -> bool {
        match self {
            Expr::And(a, b) | Expr::Or(a, b) | Expr::Comma(a, b) => {
                a.reads_metadata() || b.reads_metadata()
            }
            Expr::Not(a) => a.reads_metadata(),
            Expr::Test(t) => t.reads_metadata(),
        }
    }

    fn has_action(&self) -> bool {
        match self {
            Expr::And(a, b) | Expr::Or(a, b) | Expr::Comma(a, b) => {
                a.has_action() || b.has_action()
            }
            Expr::Not(a) => a.has_action(),
            Expr::Test(t) => t.is_action(),
        }
    }
}

/// One `-exec`, `-execdir`, `-ok` or `-okdir`.
#[derive(Debug)]
pub(crate) struct Exec {
    pub(crate) argv: Vec<String>,
    /// `{} +`: names are gathered and run in batches.
    pub(crate) batch: bool,
    /// `-execdir`/`-okdir`: run in the file's directory with `./NAME`.
    pub(crate) in_dir: bool,
    /// `-ok`/`-okdir`: ask on stderr, read the answer from stdin.
    pub(crate) ask: bool,
}

/// What the command line asks for.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) starts: Vec<String>,
    pub(crate) follow: Follow,
    pub(crate) expr: Expr,
    pub(crate) maxdepth: Option<usize>,
    pub(crate) mindepth: usize,
    pub(crate) depth_first: bool,
    pub(crate) execs: Vec<Exec>,
    /// Files `-fprint`, `-fprint0`, `-fprintf` and `-fls` write to, as given.
    pub(crate) outputs: Vec<String>,
    /// `-help` was given: print the usage and do nothing else.
    pub(crate) help: bool,
}

impl Plan {
    /// Whether the walk needs only the names and kinds of what it lists (`find -name
    /// '*.c' -type f`): nothing is followed and no test reads more, so a directory's
    /// listing can come without each entry's metadata, as GNU find reads only the
    /// directory (`d_type`) then.
    pub(crate) fn names_and_kinds_suffice(&self) -> bool {
        self.follow != Follow::Always && !self.expr.reads_metadata()
    }
}

/// What the parser needs from outside: the session user and the times of reference files.
pub(crate) struct Env<'a> {
    pub(crate) user: &'a str,
    /// The modification time of a `-newer` file, or the error text for it.
    pub(crate) mtime_of: &'a (dyn Fn(&str) -> Result<SystemTime, String> + Sync),
    /// `TZ`'s zone, which `-newermt`'s date is read in.
    pub(crate) zone: &'a crate::cmd::zone::Zone,
}

struct Parser<'a> {
    args: &'a [String],
    pos: usize,
    env: &'a Env<'a>,
    regex_type: RegexType,
    plan: Plan,
}

fn missing(name: &str) -> String {
    format!("missing argument to `{name}'")
}

/// Parses the whole command line (without `find` itself).
pub(crate) fn parse(args: &[String], env: &Env<'_>) -> Result<Plan, String> {
    let mut plan = Plan {
        starts: Vec::new(),
        follow: Follow::Never,
        expr: Expr::Test(Test::True),
        maxdepth: None,
        mindepth: 0,
        depth_first: false,
        execs: Vec::new(),
        outputs: Vec::new(),
        help: false,
    };
    let mut pos = 0;
    while let Some(a) = args.get(pos) {
        match a.as_str() {
            "-H" => plan.follow = Follow::StartingPoints,
            "-L" => plan.follow = Follow::Always,
            "-P" => plan.follow = Follow::Never,
            "--" => {
                pos += 1;
                break;
            }
            "-D" => {
                pos += 1;
                if args.get(pos).is_none() {
                    return Err(missing("-D"));
                }
            }
            o if o.starts_with("-O") && o.len() > 2 => {}
            _ => break,
        }
        pos += 1;
    }
    while let Some(a) = args.get(pos) {
        if looks_like_expression(a) {
            break;
        }
        plan.starts.push(a.clone());
        pos += 1;
    }
    let mut p = Parser {
        args,
        pos,
        env,
        regex_type: RegexType::Emacs,
        plan,
    };
    let expr = if p.pos < args.len() {
        let e = p.comma()?;
        if let Some(extra) = args.get(p.pos) {
            return Err(if extra == ")" {
                "you have too many ')'".to_string()
            } else {
                format!("paths must precede expression: `{extra}'")
            });
        }
        Some(e)
    } else {
        None
    };
    let mut plan = p.plan;
    plan.expr = match expr {
        None => Expr::Test(Test::Print {
            out: None,
            zero: false,
        }),
        Some(e) if !e.has_action() => Expr::And(
            Box::new(e),
            Box::new(Expr::Test(Test::Print {
                out: None,
                zero: false,
            })),
        ),
        Some(e) => e,
    };
    if plan.starts.is_empty() {
        plan.starts.push(".".to_string());
    }
    Ok(plan)
}

fn looks_like_expression(a: &str) -> bool {
    (a.starts_with('-') && a.len() > 1) || matches!(a, "!" | "(" | ")" | ",")
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.args.get(self.pos).map(String::as_str)
    }

    fn comma(&mut self) -> Result<Expr, String> {
        let mut left = self.or()?;
        while self.peek() == Some(",") {
            self.pos += 1;
            if matches!(self.peek(), None | Some(")")) {
                return Err("expected an expression after ','".into());
            }
            let right = self.or()?;
            left = Expr::Comma(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        while let Some(op @ ("-o" | "-or")) = self.peek() {
            let op = op.to_string();
            self.pos += 1;
            if matches!(
                self.peek(),
                None | Some(")" | "," | "-o" | "-or" | "-a" | "-and")
            ) {
                return Err(format!("expected an expression after '{op}'"));
            }
            let right = self.and()?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.unary()?;
        loop {
            match self.peek() {
                None | Some(")" | "," | "-o" | "-or") => return Ok(left),
                Some(op @ ("-a" | "-and")) => {
                    let op = op.to_string();
                    self.pos += 1;
                    if matches!(
                        self.peek(),
                        None | Some(")" | "," | "-o" | "-or" | "-a" | "-and")
                    ) {
                        return Err(format!("expected an expression after '{op}'"));
                    }
                }
                Some(_) => {}
            }
            let right = self.unary()?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
    }

    fn unary(&mut self) -> Result<Expr, String> {
        match self.peek() {
            Some(op @ ("!" | "-not")) => {
                let op = op.to_string();
                self.pos += 1;
                if matches!(
                    self.peek(),
                    None | Some(")" | "," | "-o" | "-or" | "-a" | "-and")
                ) {
                    return Err(format!("expected an expression after '{op}'"));
                }
                Ok(Expr::Not(Box::new(self.unary()?)))
            }
            Some("(") => {
                self.pos += 1;
                if self.peek() == Some(")") {
                    return Err("invalid expression; empty parentheses are not allowed.".into());
                }
                if self.peek().is_none() {
                    return Err("invalid expression; I was expecting to find a ')' somewhere but did not see one.".into());
                }
                let e = self.comma()?;
                if self.peek() != Some(")") {
                    return Err("invalid expression; I was expecting to find a ')' somewhere but did not see one.".into());
                }
                self.pos += 1;
                Ok(e)
            }
            Some(op @ ("-o" | "-or" | "-a" | "-and" | ",")) => Err(format!(
                "invalid expression; you have used a binary operator '{op}' with nothing before it."
            )),
            Some(")") => Err("invalid expression; you have too many ')'".into()),
            _ => self.primary().map(Expr::Test),
        }
    }

    /// The argument of the predicate just read.
    fn arg(&mut self, name: &str) -> Result<String, String> {
        let a = self
            .args
            .get(self.pos)
            .cloned()
            .ok_or_else(|| missing(name))?;
        self.pos += 1;
        Ok(a)
    }

    fn output(&mut self, name: &str) -> Result<usize, String> {
        let file = self.arg(name)?;
        self.plan.outputs.push(file);
        Ok(self.plan.outputs.len() - 1)
    }

    fn primary(&mut self) -> Result<Test, String> {
        let Some(name) = self.args.get(self.pos).cloned() else {
            return Err("expected an expression".into());
        };
        if !name.starts_with('-') || name == "-" {
            return Err(format!("paths must precede expression: `{name}'"));
        }
        self.pos += 1;
        let n = name.as_str();
        Ok(match n {
            "-true" => Test::True,
            "-false" => Test::False,
            "-print" => Test::Print {
                out: None,
                zero: false,
            },
            "-print0" => Test::Print {
                out: None,
                zero: true,
            },
            "-fprint" | "-fprint0" => Test::Print {
                out: Some(self.output(n)?),
                zero: n == "-fprint0",
            },
            "-printf" => {
                let fmt = parse_format(&self.arg(n)?)?;
                Test::Printf { out: None, fmt }
            }
            "-fprintf" => {
                let out = Some(self.output(n)?);
                let fmt = parse_format(&self.arg(n)?)?;
                Test::Printf { out, fmt }
            }
            "-ls" => Test::Ls { out: None },
            "-fls" => Test::Ls {
                out: Some(self.output(n)?),
            },
            "-delete" => {
                self.plan.depth_first = true;
                Test::Delete
            }
            "-prune" => Test::Prune,
            "-quit" => Test::Quit,
            "-exec" | "-execdir" | "-ok" | "-okdir" => self.exec(n)?,
            "-name" | "-iname" => Test::Name {
                pat: self.arg(n)?,
                icase: n == "-iname",
            },
            "-path" | "-ipath" | "-wholename" | "-iwholename" => Test::Path {
                pat: self.arg(n)?,
                icase: n.starts_with("-i"),
            },
            "-lname" | "-ilname" => Test::Lname {
                pat: self.arg(n)?,
                icase: n == "-ilname",
            },
            "-regex" | "-iregex" => {
                let pat = self.arg(n)?;
                let re = compile_regex(&pat, self.regex_type, n == "-iregex")?;
                Test::Regex(re)
            }
            "-regextype" => {
                let t = self.arg(n)?;
                self.regex_type = RegexType::from_name(&t).ok_or_else(|| {
                    let valid: Vec<String> = REGEX_TYPES.iter().map(|t| format!("'{t}'")).collect();
                    format!(
                        "Unknown regular expression type '{t}'; valid types are {}.",
                        valid.join(", ")
                    )
                })?;
                Test::True
            }
            "-type" | "-xtype" => {
                let kinds = parse_types(n, &self.arg(n)?)?;
                if n == "-type" {
                    Test::Type(kinds)
                } else {
                    Test::XType(kinds)
                }
            }
            "-size" => {
                let a = self.arg(n)?;
                let (cmp, rest) = split_cmp(&a);
                let (digits, unit) = match rest.char_indices().last() {
                    Some((i, c)) if !c.is_ascii_digit() => (&rest[..i], Some(c)),
                    _ => (rest, None),
                };
                let unit = match unit {
                    None | Some('b') => 512,
                    Some('c') => 1,
                    Some('w') => 2,
                    Some('k') => 1024,
                    Some('M') => 1 << 20,
                    Some('G') => 1 << 30,
                    Some(c) => return Err(format!("invalid -size type `{c}'")),
                };
                let n = digits
                    .parse()
                    .map_err(|_| format!("invalid argument `{a}' to `-size'"))?;
                Test::Size { cmp, n, unit }
            }
            "-mtime" | "-atime" | "-ctime" | "-mmin" | "-amin" | "-cmin" => {
                let a = self.arg(n)?;
                let (cmp, rest) = split_cmp(&a);
                let v = rest
                    .parse()
                    .map_err(|_| format!("invalid argument `{a}' to `{n}'"))?;
                let unit = if n.ends_with("min") { 60 } else { 86400 };
                Test::Age { cmp, n: v, unit }
            }
            "-newer" | "-anewer" | "-cnewer" => {
                let f = self.arg(n)?;
                Test::Newer((self.env.mtime_of)(&f)?)
            }
            _ if n.starts_with("-newer") && n.len() == 8 => {
                let f = self.arg(n)?;
                let t = if n.ends_with('t') {
                    super::super::date::read_date(&f, self.env.zone).ok_or_else(|| {
                        format!("I cannot figure out how to interpret '{f}' as a date or time")
                    })?
                } else {
                    (self.env.mtime_of)(&f)?
                };
                Test::Newer(t)
            }
            "-perm" => {
                let a = self.arg(n)?;
                let (how, m) = match a.as_bytes().first() {
                    Some(b'-') => (PermHow::All, &a[1..]),
                    Some(b'/') => (PermHow::Any, &a[1..]),
                    _ => (PermHow::Exact, a.as_str()),
                };
                let mode = parse_mode(m).ok_or_else(|| format!("invalid mode '{m}'"))?;
                Test::Perm { mode, how }
            }
            "-user" | "-group" => {
                let who = self.arg(n)?;
                let known = who == self.env.user || who.bytes().all(|b| b.is_ascii_digit());
                if !known {
                    return Err(if n == "-user" {
                        format!("'{who}' is not the name of a known user")
                    } else {
                        format!("'{who}' is not the name of an existing group")
                    });
                }
                Test::Owner(who == self.env.user)
            }
            "-nouser" | "-nogroup" => Test::False,
            "-empty" => Test::Empty,
            "-readable" => Test::Access(0o400),
            "-writable" => Test::Access(0o200),
            "-executable" => Test::Access(0o100),
            "-maxdepth" | "-mindepth" => {
                let a = self.arg(n)?;
                let v: usize = a
                    .parse()
                    .ok()
                    .filter(|_| !a.starts_with('+'))
                    .ok_or_else(|| {
                        format!(
                            "Expected a positive decimal integer argument to {n}, but got '{a}'"
                        )
                    })?;
                if n == "-maxdepth" {
                    self.plan.maxdepth = Some(v);
                } else {
                    self.plan.mindepth = v;
                }
                Test::True
            }
            "-depth" | "-d" => {
                self.plan.depth_first = true;
                Test::True
            }
            "-follow" => {
                self.plan.follow = Follow::Always;
                Test::True
            }
            "-xdev"
            | "-mount"
            | "-noleaf"
            | "-ignore_readdir_race"
            | "-noignore_readdir_race"
            | "-nowarn"
            | "-warn" => Test::True,
            "-help" | "--help" => {
                self.plan.help = true;
                Test::True
            }
            _ => return Err(format!("unknown predicate `{n}'")),
        })
    }

    fn exec(&mut self, name: &str) -> Result<Test, String> {
        let mut argv = Vec::new();
        let mut batch = false;
        loop {
            let Some(a) = self.args.get(self.pos) else {
                return Err(missing(name));
            };
            self.pos += 1;
            if a == ";" {
                break;
            }
            if a == "+" && argv.last().is_some_and(|l: &String| l == "{}") {
                batch = true;
                break;
            }
            argv.push(a.clone());
        }
        if argv.is_empty() {
            return Err(missing(name));
        }
        if batch && argv.iter().filter(|a| a.contains("{}")).count() > 1 {
            return Err(format!(
                "only one instance of {{}} is supported with {name} ... +"
            ));
        }
        let ask = name.starts_with("-ok");
        if ask && batch {
            return Err(missing(name));
        }
        self.plan.execs.push(Exec {
            argv,
            batch,
            in_dir: name.ends_with("dir"),
            ask,
        });
        Ok(Test::Exec(self.plan.execs.len() - 1))
    }
}

fn split_cmp(a: &str) -> (Cmp, &str) {
    if let Some(r) = a.strip_prefix('+') {
        (Cmp::Gt, r)
    } else if let Some(r) = a.strip_prefix('-') {
        (Cmp::Lt, r)
    } else {
        (Cmp::Eq, a)
    }
}

fn parse_types(name: &str, a: &str) -> Result<Vec<FileKind>, String> {
    if a.is_empty() {
        return Err(format!(
            "Arguments to {name} should contain at least one letter"
        ));
    }
    let mut kinds = Vec::new();
    let parts: Vec<&str> = a.split(',').collect();
    for (i, part) in parts.iter().enumerate() {
        let kind = match *part {
            "f" => FileKind::File,
            "d" => FileKind::Dir,
            "l" => FileKind::Symlink,
            "c" => FileKind::CharDevice,
            // Kinds a fork never holds: they match nothing.
            "b" | "p" | "s" | "D" => continue,
            "" if i + 1 == parts.len() => {
                return Err(format!(
                    "Last file type in list argument to {name} is missing, i.e., list is ending on: ','"
                ));
            }
            "" => return Err(format!("Unknown argument to {name}: ,")),
            p if p.len() > 1 => {
                return Err(format!(
                    "Must separate multiple arguments to {name} using: ','"
                ));
            }
            p => return Err(format!("Unknown argument to {name}: {p}")),
        };
        if kinds.contains(&kind) {
            return Err(format!(
                "Duplicate file type '{part}' in the argument list to {name}."
            ));
        }
        kinds.push(kind);
    }
    Ok(kinds)
}

/// An octal mode or a symbolic one (`u+x,g=rw`) applied to 0, as `-perm` reads them.
pub(crate) fn parse_mode(m: &str) -> Option<u32> {
    if m.is_empty() {
        return None;
    }
    if m.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        let v = u32::from_str_radix(m, 8).ok()?;
        return (v <= 0o7777).then_some(v);
    }
    let mut mode = 0u32;
    for clause in m.split(',') {
        let ops_at = clause.find(['+', '-', '='])?;
        let who = &clause[..ops_at];
        let mut mask = 0u32;
        for c in who.chars() {
            mask |= match c {
                'u' => 0o4700,
                'g' => 0o2070,
                'o' => 0o1007,
                'a' => 0o7777,
                _ => return None,
            };
        }
        if who.is_empty() {
            mask = 0o7777;
        }
        let mut rest = &clause[ops_at..];
        while let Some(op) = rest.chars().next() {
            if !matches!(op, '+' | '-' | '=') {
                return None;
            }
            rest = &rest[1..];
            let end = rest.find(['+', '-', '=']).unwrap_or(rest.len());
            let mut bits = 0u32;
            for c in rest[..end].chars() {
                bits |= match c {
                    'r' => 0o444,
                    'w' => 0o222,
                    'x' | 'X' => 0o111,
                    's' => 0o6000,
                    't' => 0o1000,
                    'u' => ((mode & 0o700) >> 6) * 0o111,
                    'g' => ((mode & 0o070) >> 3) * 0o111,
                    'o' => (mode & 0o007) * 0o111,
                    _ => return None,
                };
            }
            let bits = bits & mask;
            match op {
                '+' => mode |= bits,
                '-' => mode &= !bits,
                _ => mode = (mode & !(mask & 0o7777)) | bits,
            }
            rest = &rest[end..];
        }
    }
    Some(mode)
}

/// Parses a `-printf` format into pieces.
pub(crate) fn parse_format(f: &str) -> Result<Vec<Piece>, String> {
    let b = f.as_bytes();
    let mut pieces = Vec::new();
    let mut lit = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let Some(&c) = b.get(i + 1) else {
                    lit.push(b'\\');
                    i += 1;
                    continue;
                };
                i += 2;
                match c {
                    b'a' => lit.push(7),
                    b'b' => lit.push(8),
                    b'f' => lit.push(12),
                    b'n' => lit.push(b'\n'),
                    b'r' => lit.push(b'\r'),
                    b't' => lit.push(b'\t'),
                    b'v' => lit.push(11),
                    b'\\' => lit.push(b'\\'),
                    b'c' => {
                        pieces.push(Piece::Lit(std::mem::take(&mut lit)));
                        pieces.push(Piece::Stop);
                    }
                    b'0'..=b'7' => {
                        let mut v = u32::from(c - b'0');
                        let mut used = 1;
                        while used < 3 {
                            match b.get(i) {
                                Some(d @ b'0'..=b'7') => {
                                    v = v * 8 + u32::from(d - b'0');
                                    i += 1;
                                    used += 1;
                                }
                                _ => break,
                            }
                        }
                        lit.push((v & 0xff) as u8);
                    }
                    other => {
                        pieces.push(Piece::Lit(std::mem::take(&mut lit)));
                        pieces.push(Piece::Dir {
                            left: false,
                            alt: false,
                            width: None,
                            prec: None,
                            kind: '\\',
                            sub: Some(char::from(other)),
                        });
                    }
                }
            }
            b'%' => {
                let start = i;
                i += 1;
                let (mut left, mut alt) = (false, false);
                while let Some(&c) = b.get(i) {
                    match c {
                        b'-' => left = true,
                        b'#' => alt = true,
                        b'+' | b' ' | b'0' => {}
                        _ => break,
                    }
                    i += 1;
                }
                let digits = |i: &mut usize| {
                    let s = *i;
                    while b.get(*i).is_some_and(u8::is_ascii_digit) {
                        *i += 1;
                    }
                    std::str::from_utf8(&b[s..*i])
                        .ok()
                        .and_then(|d| d.parse().ok())
                };
                let width = digits(&mut i);
                let prec = if b.get(i) == Some(&b'.') {
                    i += 1;
                    Some(digits(&mut i).unwrap_or(0))
                } else {
                    None
                };
                let Some(&k) = b.get(i) else {
                    return Err("error: % at end of format string".into());
                };
                i += 1;
                let kind = char::from(k);
                if kind == '%' {
                    lit.push(b'%');
                    continue;
                }
                let sub = if matches!(kind, 'A' | 'B' | 'C' | 'T') {
                    let Some(&s) = b.get(i) else {
                        return Err(format!("error: missing time field after %{kind}"));
                    };
                    i += 1;
                    Some(char::from(s))
                } else {
                    None
                };
                pieces.push(Piece::Lit(std::mem::take(&mut lit)));
                if !k.is_ascii() {
                    // Not a directive: keep the bytes as written.
                    lit.extend_from_slice(&b[start..i]);
                    continue;
                }
                pieces.push(Piece::Dir {
                    left,
                    alt,
                    width,
                    prec,
                    kind,
                    sub,
                });
            }
            c => {
                lit.push(c);
                i += 1;
            }
        }
    }
    pieces.push(Piece::Lit(lit));
    pieces.retain(|p| !matches!(p, Piece::Lit(l) if l.is_empty()));
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Result<Plan, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let env = Env {
            user: "me",
            mtime_of: &|f: &str| Err(format!("'{f}': No such file or directory")),
            zone: &crate::cmd::zone::Zone::utc(),
        };
        parse(&args, &env)
    }

    #[test]
    fn errors_as_gnu_words_them() {
        let e = |a: &[&str]| plan(a).err().unwrap_or_default();
        assert_eq!(e(&["-foo"]), "unknown predicate `-foo'");
        assert_eq!(
            e(&["a", "-name", "x", "b"]),
            "paths must precede expression: `b'"
        );
        assert_eq!(e(&["-name"]), "missing argument to `-name'");
        assert_eq!(
            e(&["-o"]),
            "invalid expression; you have used a binary operator '-o' with nothing before it."
        );
        assert_eq!(
            e(&["-name", "x", "-o"]),
            "expected an expression after '-o'"
        );
        assert_eq!(e(&["-name", "x", ")"]), "you have too many ')'");
        assert_eq!(
            e(&["-exec", "echo", "{}", "x", "+"]),
            "missing argument to `-exec'"
        );
        assert_eq!(e(&["-size", "3q"]), "invalid -size type `q'");
        assert_eq!(e(&["-type", "f,q"]), "Unknown argument to -type: q");
        assert_eq!(e(&["-perm", "9"]), "invalid mode '9'");
        assert_eq!(e(&["-newer", "x"]), "'x': No such file or directory");
        assert_eq!(e(&["-printf", "%"]), "error: % at end of format string");
    }

    #[test]
    fn implicit_print_and_starts() {
        let p = plan(&["-name", "x"]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.starts, vec!["."]);
        assert!(matches!(p.expr, Expr::And(_, _)));
        let p = plan(&["a", "b", "-quit"]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.starts, vec!["a", "b"]);
        assert!(matches!(p.expr, Expr::Test(Test::Quit)));
        let p = plan(&["-delete"]).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.depth_first);
    }

    #[test]
    fn modes() {
        assert_eq!(parse_mode("644"), Some(0o644));
        assert_eq!(parse_mode("u+x"), Some(0o100));
        assert_eq!(parse_mode("u=rw,g=r,o=r"), Some(0o644));
        assert_eq!(parse_mode("a+r"), Some(0o444));
        assert_eq!(parse_mode("+w"), Some(0o222));
        assert_eq!(parse_mode("9"), None);
        assert_eq!(parse_mode("q+x"), None);
    }

    #[test]
    fn formats() {
        let f = parse_format("%-5p\\n%T@%%\\0").unwrap_or_default();
        assert_eq!(f.len(), 4);
        assert_eq!(f[1], Piece::Lit(vec![b'\n']));
        assert_eq!(f[3], Piece::Lit(vec![b'%', 0]));
    }
}
