//! `join`: join the lines of two sorted files on a common field, streaming both; only
//! the lines of one group of equal keys are held (charged to the session's budget).

use async_trait::async_trait;
use clap::Parser;

use super::util::{BufOut, MAX_LINE, Pacer, Reader, quote, quotef};
use crate::{Charge, CmdResult, Command, Context, Interrupt, parse_args};

/// For each pair of input lines with identical join fields, write a line to standard
/// output. The default join field is the first, delimited by blanks. One of FILE1 or
/// FILE2 (not both) may be -, meaning standard input.
#[derive(Parser, Debug)]
#[command(name = "join")]
struct Args {
    /// Also print unpairable lines from file FILENUM (1 or 2).
    #[arg(short = 'a', value_name = "FILENUM")]
    also: Vec<String>,
    /// Replace missing input fields with EMPTY.
    #[arg(short = 'e', value_name = "EMPTY")]
    empty: Option<String>,
    /// Ignore differences in case when comparing fields.
    #[arg(short = 'i', long = "ignore-case")]
    ignore_case: bool,
    /// Equivalent to '-1 FIELD -2 FIELD'.
    #[arg(short = 'j', value_name = "FIELD")]
    join_field: Option<String>,
    /// Obey FORMAT while constructing output line ('auto', or a list like 0,1.2,2.1).
    #[arg(short = 'o', value_name = "FORMAT")]
    format: Vec<String>,
    /// Use CHAR as input and output field separator.
    #[arg(short = 't', value_name = "CHAR")]
    tab: Option<String>,
    /// Like -a FILENUM, but suppress joined output lines.
    #[arg(short = 'v', value_name = "FILENUM")]
    only: Vec<String>,
    /// Join on this FIELD of file 1.
    #[arg(short = '1', value_name = "FIELD")]
    field1: Option<String>,
    /// Join on this FIELD of file 2.
    #[arg(short = '2', value_name = "FIELD")]
    field2: Option<String>,
    /// Check that the input is correctly sorted, even if all input lines are pairable.
    #[arg(long = "check-order")]
    check_order: bool,
    /// Do not check that the input is correctly sorted.
    #[arg(long = "nocheck-order")]
    nocheck_order: bool,
    /// Treat the first line in each file as field headers, print them without trying to
    /// pair them.
    #[arg(long)]
    header: bool,
    /// Line delimiter is NUL, not newline.
    #[arg(short = 'z', long = "zero-terminated")]
    zero: bool,
    /// FILE1 FILE2
    files: Vec<String>,
}

/// How fields are separated.
#[derive(Clone, Copy)]
enum Sep {
    /// Runs of blanks, leading blanks ignored; output with a space.
    Blanks,
    /// Every occurrence of the byte.
    Char(u8),
    /// `-t ''`: the whole line is one field.
    Whole,
}

fn split(line: &[u8], sep: Sep) -> Vec<Vec<u8>> {
    match sep {
        Sep::Whole => vec![line.to_vec()],
        Sep::Char(c) => line.split(|b| *b == c).map(<[u8]>::to_vec).collect(),
        Sep::Blanks => line
            .split(|b| *b == b' ' || *b == b'\t')
            .filter(|f| !f.is_empty())
            .map(<[u8]>::to_vec)
            .collect(),
    }
}

/// One output field spec: `0` (the join field) or file.field (both 1-based).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Spec {
    Key,
    Field(usize, usize),
}

fn parse_field(s: &str) -> Option<usize> {
    s.parse::<usize>().ok().filter(|n| *n >= 1)
}

fn parse_format(list: &str) -> Result<Vec<Spec>, String> {
    let mut out = Vec::new();
    for item in list.split([',', ' ', '\t']).filter(|s| !s.is_empty()) {
        if item == "0" {
            out.push(Spec::Key);
            continue;
        }
        let file = match item.as_bytes()[0] {
            b'1' => 1,
            b'2' => 2,
            _ => {
                return Err(format!(
                    "invalid file number in field spec: {}",
                    quote(item)
                ));
            }
        };
        let Some(field) = item[1..].strip_prefix('.') else {
            return Err(format!("invalid field specifier: {}", quote(item)));
        };
        let Some(field) = parse_field(field) else {
            return Err(format!("invalid field number: {}", quote(field)));
        };
        out.push(Spec::Field(file, field));
    }
    Ok(out)
}

struct Line {
    raw: Vec<u8>,
    fields: Vec<Vec<u8>>,
}

fn field(l: Option<&Line>, n: usize) -> Option<&[u8]> {
    l.and_then(|l| l.fields.get(n - 1)).map(Vec::as_slice)
}

/// One input file, read a line at a time, with the lines of the current group.
struct Side {
    name: String,
    reader: Reader,
    field: usize,
    lineno: u64,
    seq: Vec<Line>,
    prev_key: Option<Vec<u8>>,
    reported: bool,
    charge: Charge,
}

struct Joiner<'a> {
    args: &'a Args,
    sep: Sep,
    eol: u8,
    empty: Vec<u8>,
    format: Option<Vec<Spec>>,
    auto: bool,
    print_unpaired: [bool; 2],
    print_pairs: bool,
    seen_unpairable: bool,
    disorder: bool,
}

impl Joiner<'_> {
    fn key(&self, side: &Side, line: &Line) -> Vec<u8> {
        let k = line
            .fields
            .get(side.field - 1)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if self.args.ignore_case {
            k.to_ascii_lowercase()
        } else {
            k.to_vec()
        }
    }

    /// Reads one more line into `side.seq`; `Ok(Err(()))` after a fatal order error.
    async fn read(
        &mut self,
        ctx: &Context,
        side: &mut Side,
    ) -> Result<Result<bool, ()>, Interrupt> {
        let raw = match side.reader.record(self.eol, MAX_LINE).await? {
            Ok(Some(mut l)) => {
                if l.last() == Some(&self.eol) {
                    l.pop();
                }
                l
            }
            Ok(None) => return Ok(Ok(false)),
            Err(e) => {
                ctx.warn("join", format!("{}: {e}", quotef(&side.name)))
                    .await;
                return Ok(Err(()));
            }
        };
        side.lineno += 1;
        side.charge.grow(raw.len() * 2 + 64)?;
        let line = Line {
            fields: split(&raw, self.sep),
            raw,
        };
        let key = self.key(side, &line);
        let checking = !self.args.nocheck_order && (self.args.check_order || self.seen_unpairable);
        if checking && !side.reported && side.prev_key.as_ref().is_some_and(|p| key < *p) {
            ctx.err(format!(
                "join: {}:{}: is not sorted: {}\n",
                side.name,
                side.lineno,
                String::from_utf8_lossy(&line.raw)
            ))
            .await;
            if self.args.check_order {
                return Ok(Err(()));
            }
            side.reported = true;
            self.disorder = true;
        }
        side.prev_key = Some(key);
        side.seq.push(line);
        Ok(Ok(true))
    }

    /// Drops the group and reads the first line of the next.
    async fn advance(
        &mut self,
        ctx: &Context,
        side: &mut Side,
    ) -> Result<Result<bool, ()>, Interrupt> {
        side.seq.clear();
        side.charge = ctx.budget.empty_charge();
        self.read(ctx, side).await
    }

    fn out_sep(&self) -> u8 {
        match self.sep {
            Sep::Char(c) => c,
            _ => b' ',
        }
    }

    /// The output line for `l1` and `l2` (either may be missing for an unpaired line).
    fn render<'l>(
        &'l self,
        f1: usize,
        f2: usize,
        l1: Option<&'l Line>,
        l2: Option<&'l Line>,
    ) -> Vec<u8> {
        let sep = self.out_sep();
        let mut parts: Vec<&[u8]> = Vec::new();
        let key = field(l1, f1).or_else(|| field(l2, f2));
        match &self.format {
            Some(specs) => {
                for spec in specs {
                    let v = match *spec {
                        Spec::Key => key,
                        Spec::Field(1, n) => field(l1, n),
                        Spec::Field(_, n) => field(l2, n),
                    };
                    parts.push(v.unwrap_or(&self.empty));
                }
            }
            None => {
                if let Some(k) = key {
                    parts.push(k);
                } else if matches!(self.sep, Sep::Whole) || l1.is_some() || l2.is_some() {
                    parts.push(&self.empty);
                }
                for (l, f) in [(l1, f1), (l2, f2)] {
                    if let Some(l) = l {
                        for (i, v) in l.fields.iter().enumerate() {
                            if i + 1 != f {
                                parts.push(v);
                            }
                        }
                    }
                }
            }
        }
        let mut out = parts.join(&sep);
        out.push(self.eol);
        out
    }

    /// `-o auto`: the format the first lines of both files give.
    fn auto_format(&mut self, s1: &Side, s2: &Side) {
        let n1 = s1.seq.first().map_or(0, |l| l.fields.len());
        let n2 = s2.seq.first().map_or(0, |l| l.fields.len());
        let mut specs = vec![Spec::Key];
        specs.extend(
            (1..=n1)
                .filter(|i| *i != s1.field)
                .map(|i| Spec::Field(1, i)),
        );
        specs.extend(
            (1..=n2)
                .filter(|i| *i != s2.field)
                .map(|i| Spec::Field(2, i)),
        );
        self.format = Some(specs);
    }
}

pub struct Join;

/// Parses a FIELD or FILENUM operand, reporting a bad one.
async fn field_arg(ctx: &Context, s: &str, max: Option<usize>) -> Option<usize> {
    match parse_field(s).filter(|n| max.is_none_or(|m| *n <= m)) {
        Some(n) => Some(n),
        None => {
            ctx.warn("join", format!("invalid field number: {}", quote(s)))
                .await;
            None
        }
    }
}

#[async_trait]
impl Command for Join {
    fn name(&self) -> &'static str {
        "join"
    }
    fn summary(&self) -> &'static str {
        "join lines of two files on a common field"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        match args.files.as_slice() {
            [] => {
                ctx.err("join: missing operand\nTry 'join --help' for more information.\n")
                    .await;
                return Ok(1);
            }
            [one] => {
                ctx.err(format!(
                    "join: missing operand after {}\nTry 'join --help' for more information.\n",
                    quote(one)
                ))
                .await;
                return Ok(1);
            }
            [_, _] => {}
            [_, _, extra, ..] => {
                ctx.err(format!(
                    "join: extra operand {}\nTry 'join --help' for more information.\n",
                    quote(extra)
                ))
                .await;
                return Ok(1);
            }
        }
        let mut f1 = 1;
        let mut f2 = 1;
        if let Some(j) = &args.join_field {
            let Some(n) = field_arg(ctx, j, None).await else {
                return Ok(1);
            };
            (f1, f2) = (n, n);
        }
        if let Some(s) = &args.field1 {
            let Some(n) = field_arg(ctx, s, None).await else {
                return Ok(1);
            };
            f1 = n;
        }
        if let Some(s) = &args.field2 {
            let Some(n) = field_arg(ctx, s, None).await else {
                return Ok(1);
            };
            f2 = n;
        }
        let mut print_unpaired = [false, false];
        for s in args.also.iter().chain(&args.only) {
            let Some(n) = field_arg(ctx, s, Some(2)).await else {
                return Ok(1);
            };
            print_unpaired[n - 1] = true;
        }
        // One byte (one that is not UTF-8 too: `-t $'\xe9'`).
        let tab_bytes = args.tab.as_deref().map(crate::bytetext::encode);
        let sep = match (args.tab.as_deref(), tab_bytes.as_deref()) {
            (None, _) | (_, None) => Sep::Blanks,
            (Some(""), _) => Sep::Whole,
            (_, Some(&[b])) => Sep::Char(b),
            (Some("\\0"), _) => Sep::Char(0),
            (Some(t), _) => {
                ctx.warn("join", format!("multi-character tab {}", quote(t)))
                    .await;
                return Ok(1);
            }
        };
        let mut auto = false;
        let mut format: Option<Vec<Spec>> = None;
        for f in &args.format {
            if f == "auto" {
                auto = true;
                continue;
            }
            match parse_format(f) {
                Ok(specs) => format.get_or_insert_with(Vec::new).extend(specs),
                Err(msg) => {
                    ctx.warn("join", msg).await;
                    return Ok(1);
                }
            }
        }
        let mut sides = Vec::with_capacity(2);
        for (f, field) in args.files.iter().zip([f1, f2]) {
            match Reader::open(ctx, f).await {
                Ok(reader) => sides.push(Side {
                    name: f.clone(),
                    reader,
                    field,
                    lineno: 0,
                    seq: Vec::new(),
                    prev_key: None,
                    reported: false,
                    charge: ctx.budget.empty_charge(),
                }),
                Err(e) => {
                    ctx.warn("join", format!("{}: {e}", quotef(f))).await;
                    return Ok(1);
                }
            }
        }
        let Some(mut s2) = sides.pop() else {
            return Ok(1);
        };
        let Some(mut s1) = sides.pop() else {
            return Ok(1);
        };
        let mut j = Joiner {
            args: &args,
            sep,
            eol: if args.zero { 0 } else { b'\n' },
            empty: args.empty.clone().unwrap_or_default().into_bytes(),
            format,
            auto,
            print_unpaired,
            print_pairs: args.only.is_empty(),
            seen_unpairable: false,
            disorder: false,
        };
        let mut out = BufOut::new(ctx);
        let r = run_join(ctx, &mut j, &mut s1, &mut s2, &mut out).await;
        out.flush().await?;
        match r? {
            Err(()) => Ok(1),
            Ok(()) if j.disorder => {
                ctx.warn("join", "input is not in sorted order").await;
                Ok(1)
            }
            Ok(()) => Ok(0),
        }
    }
}

macro_rules! read_or_fail {
    ($e:expr) => {
        match $e? {
            Ok(got) => got,
            Err(()) => return Ok(Err(())),
        }
    };
}

async fn run_join(
    ctx: &Context,
    j: &mut Joiner<'_>,
    s1: &mut Side,
    s2: &mut Side,
    out: &mut BufOut<'_>,
) -> Result<Result<(), ()>, Interrupt> {
    let (f1, f2) = (s1.field, s2.field);
    read_or_fail!(j.read(ctx, s1).await);
    read_or_fail!(j.read(ctx, s2).await);
    if j.auto {
        j.auto_format(s1, s2);
    }
    if j.args.header && (!s1.seq.is_empty() || !s2.seq.is_empty()) {
        let line = j.render(f1, f2, s1.seq.first(), s2.seq.first());
        out.write(&line).await?;
        s1.prev_key = None;
        s2.prev_key = None;
        read_or_fail!(j.advance(ctx, s1).await);
        read_or_fail!(j.advance(ctx, s2).await);
        s1.prev_key = None;
        s2.prev_key = None;
    }
    let mut pacer = Pacer::default();
    while !s1.seq.is_empty() && !s2.seq.is_empty() {
        pacer.tick(ctx).await?;
        let k1 = j.key(s1, &s1.seq[0]);
        let k2 = j.key(s2, &s2.seq[0]);
        match k1.cmp(&k2) {
            std::cmp::Ordering::Less => {
                if j.print_unpaired[0] {
                    out.write(&j.render(f1, f2, s1.seq.first(), None)).await?;
                }
                j.seen_unpairable = true;
                read_or_fail!(j.advance(ctx, s1).await);
                continue;
            }
            std::cmp::Ordering::Greater => {
                if j.print_unpaired[1] {
                    out.write(&j.render(f1, f2, None, s2.seq.first())).await?;
                }
                j.seen_unpairable = true;
                read_or_fail!(j.advance(ctx, s2).await);
                continue;
            }
            std::cmp::Ordering::Equal => {}
        }
        // Gather both groups of equal keys; the first line past each group stays.
        let mut eof = [false, false];
        for (i, side) in [&mut *s1, &mut *s2].into_iter().enumerate() {
            loop {
                if !read_or_fail!(j.read(ctx, side).await) {
                    eof[i] = true;
                    break;
                }
                let last = side.seq.len() - 1;
                if j.key(side, &side.seq[last]) != k1 {
                    break;
                }
            }
        }
        let n1 = s1.seq.len() - usize::from(!eof[0]);
        let n2 = s2.seq.len() - usize::from(!eof[1]);
        if j.print_pairs {
            for a in &s1.seq[..n1] {
                for b in &s2.seq[..n2] {
                    out.write(&j.render(f1, f2, Some(a), Some(b))).await?;
                    pacer.tick(ctx).await?;
                }
            }
        }
        for (side, n) in [(&mut *s1, n1), (&mut *s2, n2)] {
            side.seq.drain(..n);
            side.charge = ctx.budget.empty_charge();
        }
    }
    // What is left of either file is unpaired.
    for (i, side) in [&mut *s1, &mut *s2].into_iter().enumerate() {
        if j.print_unpaired[i] && !side.seq.is_empty() {
            j.seen_unpairable = true;
        }
        while let Some(line) = side.seq.first() {
            if j.print_unpaired[i] {
                let rendered = if i == 0 {
                    j.render(f1, f2, Some(line), None)
                } else {
                    j.render(f1, f2, None, Some(line))
                };
                out.write(&rendered).await?;
            } else if j.args.check_order || j.seen_unpairable {
                // Keep reading only to check the order, as GNU does.
            } else {
                break;
            }
            read_or_fail!(j.advance(ctx, side).await);
            pacer.tick(ctx).await?;
        }
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Invocation, MemFs};

    async fn join(args: &[&str]) -> (i32, String, String) {
        Invocation {
            fs: MemFs::with_files(&[
                ("/a", "a 1\nb 2\n"),
                ("/b", "a x\nc y\n"),
                ("/u", "b 1\na 2\nc 3\n"),
                ("/v", "a x\nb y\n"),
                ("/m", "k a b\nk c\n"),
                ("/n", "k 1\nk 2 3\n"),
            ]),
            ..Invocation::default()
        }
        .run(&Join, args)
        .await
    }

    #[tokio::test]
    async fn joins_like_gnu() {
        assert_eq!(join(&["a", "b"]).await.1, "a 1 x\n");
        assert_eq!(join(&["-a1", "-a2", "a", "b"]).await.1, "a 1 x\nb 2\nc y\n");
        assert_eq!(join(&["-v2", "a", "b"]).await.1, "c y\n");
        assert_eq!(
            join(&["-a1", "-o", "0,2.2", "-e", "NA", "a", "b"]).await.1,
            "a x\nb NA\n"
        );
        assert_eq!(
            join(&["-o", "auto", "-e", "X", "m", "n"]).await.1,
            "k a b 1\nk a b 2\nk c X 1\nk c X 2\n"
        );
        assert_eq!(join(&["--header", "m", "n"]).await.1, "k a b 1\nk c 2 3\n");
    }

    #[tokio::test]
    async fn order_and_errors() {
        let (st, out, err) = join(&["u", "v"]).await;
        assert_eq!((st, out.as_str()), (1, "b 1 y\n"));
        assert_eq!(
            err,
            "join: u:2: is not sorted: a 2\njoin: input is not in sorted order\n"
        );
        let (st, _, err) = join(&["-o", "bad", "a", "b"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "join: invalid file number in field spec: 'bad'\n")
        );
        assert_eq!(join(&["-t", "ab", "a", "b"]).await.0, 1);
        assert_eq!(join(&["a"]).await.0, 1);
    }
}
