//! `tree`: list directories as an indented tree, as Debian's `tree` (2.1) prints it: the
//! entries of each directory sorted by name (hidden ones only with `-a`), symlinks shown
//! as `name -> target` and not followed, then a blank line and
//! `N directories, M files`. The lines are drawn with ASCII (`|-- `) unless the locale's
//! charset is UTF-8 (`├── `), as tree decides from `LC_ALL`/`LC_CTYPE`/`LANG`. Like tree
//! 2.1, a listed root counts as a directory only when it shows at least one entry, and an
//! operand that is not a directory is shown as `NAME  [error opening dir]`.
//! `-J` prints the same walk as tree's JSON, `-s`/`-h` add sizes (bytes, or tree's
//! human units), `-i` drops the indentation lines, `-r` reverses the order.

use async_trait::async_trait;

use super::util::{BufOut, MAX_DEPTH};
use crate::fs::{FileKind, Metadata};
use crate::{CmdResult, Command, Context, Interrupt};

const USAGE: &str = "usage: tree [-acdfghilnpqrstuvxACDFJQNSUX] [-L level [-R]] [-H  baseHREF]
\t[-T title] [-o filename] [-P pattern] [-I pattern] [--gitignore]
\t[--gitfile[=]file] [--matchdirs] [--metafirst] [--ignore-case]
\t[--nolinks] [--hintro[=]file] [--houtro[=]file] [--inodes] [--device]
\t[--sort[=]<name>] [--dirsfirst] [--filesfirst] [--filelimit #] [--si]
\t[--du] [--prune] [--charset[=]X] [--timefmt[=]format] [--fromfile]
\t[--fflinks] [--info] [--infofile[=]file] [--noreport] [--version]
\t[--help] [--] [directory ...]
";

const HELP: &str = "usage: tree [-adfFL] [-L level] [-P pattern] [-I pattern] [--noreport]
\t[--dirsfirst] [--filesfirst] [--] [directory ...]
  ------- Listing options -------
  -a            All files are listed.
  -d            List directories only.
  -f            Print the full path prefix for each file.
  -L level      Descend only level directories deep.
  -i            Don't print indentation lines.
  -r            Reverse the order of the sort.
  -s            Print the size in bytes of each file.
  -h            Print the size in a more human readable way.
  -J            Prints out a JSON representation of the tree.
  -P pattern    List only those files that match the pattern given.
  -I pattern    Do not list files that match the given pattern.
  --noreport    Turn off file/directory count at end of tree listing.
  -F            Appends '/', '=', '*', '@', '|' or '>' as per ls -F.
  --dirsfirst   List directories before files.
  --filesfirst  List files before directories.
";

pub struct Tree;

#[derive(Default)]
struct Opts {
    all: bool,
    dirs_only: bool,
    full_path: bool,
    classify: bool,
    level: Option<usize>,
    only: Option<String>,
    ignore: Option<String>,
    noreport: bool,
    dirsfirst: bool,
    filesfirst: bool,
    unicode: bool,
    json: bool,
    no_indent: bool,
    size: bool,
    human: bool,
    reverse: bool,
}

#[derive(Default)]
struct Counts {
    dirs: u64,
    files: u64,
}

#[async_trait]
impl Command for Tree {
    fn name(&self) -> &'static str {
        "tree"
    }
    fn summary(&self) -> &'static str {
        "list contents of directories in a tree-like format"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut o = Opts::default();
        let mut roots: Vec<String> = Vec::new();
        let mut i = 0;
        let mut only_operands = false;
        while i < args.len() {
            let a = args[i].clone();
            i += 1;
            if only_operands || !a.starts_with('-') || a == "-" {
                roots.push(a);
                continue;
            }
            if let Some(long) = a.strip_prefix("--") {
                match long {
                    "" => only_operands = true,
                    "noreport" => o.noreport = true,
                    "dirsfirst" => o.dirsfirst = true,
                    "filesfirst" => o.filesfirst = true,
                    "help" => {
                        ctx.out(HELP).await?;
                        return Ok(0);
                    }
                    "version" => {
                        ctx.out("tree v2.1.0 (c) 1996 - 2022 by Steve Baker, Thomas Moore, Francesc Rocher, Florian Sesser, Kyosuke Tokoro\n").await?;
                        return Ok(0);
                    }
                    _ => {
                        ctx.err(format!("tree: Invalid argument `{a}'.\n{USAGE}"))
                            .await;
                        return Ok(1);
                    }
                }
                continue;
            }
            let chars: Vec<char> = a[1..].chars().collect();
            for (k, c) in chars.iter().enumerate() {
                match c {
                    'a' => o.all = true,
                    'd' => o.dirs_only = true,
                    'f' => o.full_path = true,
                    'F' => o.classify = true,
                    'J' => o.json = true,
                    'i' => o.no_indent = true,
                    's' => o.size = true,
                    'h' => o.human = true,
                    'r' => o.reverse = true,
                    'L' | 'P' | 'I' => {
                        let Some(v) = args.get(i).cloned() else {
                            let what = match c {
                                'L' => "Missing argument to -L option.",
                                'P' => "Missing argument to -P option.",
                                _ => "Missing argument to -I option.",
                            };
                            ctx.err(format!("tree: {what}\n")).await;
                            return Ok(1);
                        };
                        i += 1;
                        match c {
                            'L' => match v.parse::<usize>() {
                                Ok(n) if n > 0 => o.level = Some(n),
                                _ => {
                                    ctx.err("tree: Invalid level, must be greater than 0.\n")
                                        .await;
                                    return Ok(1);
                                }
                            },
                            'P' => o.only = Some(v),
                            _ => o.ignore = Some(v),
                        }
                    }
                    _ => {
                        let rest: String = chars[k..].iter().collect();
                        ctx.err(format!("tree: Invalid argument -`{rest}'.\n{USAGE}"))
                            .await;
                        return Ok(1);
                    }
                }
            }
        }
        o.unicode = super::util::utf8_locale(&ctx.env);
        if roots.is_empty() {
            roots.push(".".into());
        }
        let mut out = BufOut::new(ctx);
        let mut counts = Counts::default();
        let mut status = 0;
        if o.json {
            let mut text = String::from("[\n");
            let mut first = true;
            for root in &roots {
                let path = ctx.path(root);
                match ctx.fs.stat(&path).await {
                    Ok(m) if m.is_dir() => {
                        if !first {
                            text.push_str(",\n");
                        }
                        first = false;
                        let mut contents = Vec::new();
                        walk_json(ctx, &o, &path, root, 1, &mut counts, &mut contents).await?;
                        if !contents.is_empty() {
                            counts.dirs += 1;
                        }
                        text.push_str("  ");
                        json_entry(&o, "directory", root, None, &m, &contents, 1, &mut text);
                    }
                    Ok(m) => {
                        if !first {
                            text.push_str(",\n");
                        }
                        first = false;
                        counts.files += 1;
                        text.push_str("  ");
                        json_entry(&o, "file", root, None, &m, &[], 1, &mut text);
                    }
                    Err(_) => {
                        // tree 2.1 writes this broken fragment for a missing operand.
                        text.push_str(&format!(
                            ",\"name\":\"{}\",\"contents\":[{{\"error\": \"error opening dir\"}}\n\n  ]}}",
                            json_escape(root)
                        ));
                        first = false;
                        status = 2;
                    }
                }
            }
            text.push('\n');
            if o.noreport {
                text.push('\n');
            } else if o.dirs_only {
                text.push_str(&format!(
                    ",\n  {{\"type\":\"report\",\"directories\":{}}}\n",
                    counts.dirs
                ));
            } else {
                text.push_str(&format!(
                    ",\n  {{\"type\":\"report\",\"directories\":{},\"files\":{}}}\n",
                    counts.dirs, counts.files
                ));
            }
            text.push_str("]\n");
            out.write(text.as_bytes()).await?;
            out.flush().await?;
            return Ok(status);
        }
        for root in &roots {
            let path = ctx.path(root);
            match ctx.fs.stat(&path).await {
                Ok(m) if m.is_dir() => {
                    let mut line = info(&o, &m);
                    line.push_str(root);
                    if o.classify && !line.ends_with('/') {
                        line.push('/');
                    }
                    line.push('\n');
                    out.write(line.as_bytes()).await?;
                    let shown = walk(ctx, &o, &path, root, "", 1, &mut counts, &mut out).await?;
                    if shown > 0 {
                        counts.dirs += 1;
                    }
                }
                Ok(_) => {
                    out.write(format!("{root}  [error opening dir]\n").as_bytes())
                        .await?;
                    counts.files += 1;
                }
                Err(_) => {
                    out.write(format!("{root}  [error opening dir]\n").as_bytes())
                        .await?;
                    status = 2;
                }
            }
        }
        if !o.noreport {
            let dirs = plural(counts.dirs, "directory", "directories");
            let report = if o.dirs_only {
                format!("\n{dirs}\n")
            } else {
                format!("\n{dirs}, {}\n", plural(counts.files, "file", "files"))
            };
            out.write(report.as_bytes()).await?;
        }
        out.flush().await?;
        Ok(status)
    }
}

/// The `[size]  ` column of `-s`/`-h`, or nothing.
fn info(o: &Opts, m: &Metadata) -> String {
    if o.human {
        format!("[{:>4}]  ", human(shown_size(m)))
    } else if o.size {
        format!("[{:>11}]  ", shown_size(m))
    } else {
        String::new()
    }
}

/// The size tree shows: a directory's is its block, 4096 (as `ls -l` shows it here).
fn shown_size(m: &Metadata) -> u64 {
    if m.kind == FileKind::Dir { 4096 } else { m.len }
}

/// tree's `-h` size: bytes below 1024, else one decimal below 10 of a unit (`4.0K`),
/// none above (`12K`).
fn human(size: u64) -> String {
    if size < 1024 {
        return size.to_string();
    }
    let units = ['K', 'M', 'G', 'T', 'P', 'E'];
    let mut v = size as f64 / 1024.0;
    let mut idx = 0;
    while v >= 1024.0 && idx + 1 < units.len() {
        v /= 1024.0;
        idx += 1;
    }
    if v < 9.95 {
        format!("{v:.1}{}", units[idx])
    } else {
        format!("{v:.0}{}", units[idx])
    }
}

fn json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// One JSON entry at nesting `depth` (its contents one level deeper), without the
/// leading indentation.
#[allow(
    clippy::too_many_arguments,
    reason = "the fields of one entry as tree prints them"
)]
fn json_entry(
    o: &Opts,
    kind: &str,
    name: &str,
    target: Option<&str>,
    meta: &Metadata,
    contents: &[String],
    depth: usize,
    out: &mut String,
) {
    out.push_str(&format!(
        "{{\"type\":\"{kind}\",\"name\":\"{}\"",
        json_escape(name)
    ));
    if let Some(t) = target {
        out.push_str(&format!(",\"target\":\"{}\"", json_escape(t)));
    }
    if o.human {
        out.push_str(&format!(",\"size\":\"{}\"", human(shown_size(meta))));
    } else if o.size {
        out.push_str(&format!(",\"size\":{}", shown_size(meta)));
    }
    if contents.is_empty() {
        out.push('}');
        return;
    }
    out.push_str(",\"contents\":[\n");
    out.push_str(&contents.join(",\n"));
    out.push('\n');
    out.push_str(&"  ".repeat(depth));
    out.push_str("]}");
}

/// The sorted, filtered entries of a directory: (name, own metadata, is or leads to a
/// directory).
async fn entries(
    ctx: &Context,
    o: &Opts,
    path: &str,
) -> Result<Vec<(String, Metadata, bool)>, Interrupt> {
    let Ok(entries) = ctx.fs.read_dir(path).await else {
        return Ok(Vec::new());
    };
    let mut list: Vec<(String, Metadata, bool)> = Vec::new();
    for e in entries {
        if !o.all && e.name.starts_with('.') {
            continue;
        }
        let child = format!("{}/{}", path.trim_end_matches('/'), e.name);
        let is_dir = match e.meta.kind {
            FileKind::Dir => true,
            FileKind::Symlink => ctx.fs.stat(&child).await.is_ok_and(|m| m.is_dir()),
            _ => false,
        };
        if o.dirs_only && !is_dir {
            continue;
        }
        if let Some(ig) = &o.ignore
            && matches(ig, &e.name)
        {
            continue;
        }
        if let Some(only) = &o.only
            && !is_dir
            && !matches(only, &e.name)
        {
            continue;
        }
        list.push((e.name, e.meta, is_dir));
    }
    list.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    if o.reverse {
        list.reverse();
    }
    if o.dirsfirst {
        list.sort_by_key(|e| !e.2);
    } else if o.filesfirst {
        list.sort_by_key(|e| e.2);
    }
    Ok(list)
}

/// `-J`: the entries of the directory at `path` as JSON texts (indented for `depth`).
fn walk_json<'a>(
    ctx: &'a Context,
    o: &'a Opts,
    path: &'a str,
    shown: &'a str,
    depth: usize,
    counts: &'a mut Counts,
    out: &'a mut Vec<String>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Interrupt>> + Send + 'a>> {
    Box::pin(async move {
        if o.level.is_some_and(|l| depth > l) || depth > MAX_DEPTH {
            return Ok(());
        }
        ctx.checkpoint().await?;
        for (name, meta, is_dir) in entries(ctx, o, path).await? {
            let child = format!("{}/{}", path.trim_end_matches('/'), name);
            let child_shown = format!("{}/{}", shown.trim_end_matches('/'), name);
            let label = if o.full_path { &child_shown } else { &name };
            let mut text = "  ".repeat(depth + 1);
            if meta.kind == FileKind::Symlink {
                let target = ctx.fs.readlink(&child).await.unwrap_or_default();
                json_entry(
                    o,
                    "link",
                    label,
                    Some(&target),
                    &meta,
                    &[],
                    depth + 1,
                    &mut text,
                );
                if is_dir {
                    counts.dirs += 1;
                } else {
                    counts.files += 1;
                }
            } else if is_dir {
                counts.dirs += 1;
                let mut contents = Vec::new();
                walk_json(
                    ctx,
                    o,
                    &child,
                    &child_shown,
                    depth + 1,
                    counts,
                    &mut contents,
                )
                .await?;
                json_entry(
                    o,
                    "directory",
                    label,
                    None,
                    &meta,
                    &contents,
                    depth + 1,
                    &mut text,
                );
            } else {
                counts.files += 1;
                json_entry(o, "file", label, None, &meta, &[], depth + 1, &mut text);
            }
            out.push(text);
        }
        Ok(())
    })
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// tree's wildcard match of `name` against `pattern`: `|` separates alternatives; `*`,
/// `?`, `[...]` (with `!`/`^` negation and ranges) as in the shell.
fn matches(pattern: &str, name: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    pattern.split('|').any(|alt| {
        let p: Vec<char> = alt.chars().collect();
        glob(&p, &name)
    })
}

fn glob(p: &[char], s: &[char]) -> bool {
    // Iterative matcher with backtracking on the last `*`.
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, si));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                '[' => {
                    if let Some((ok, next)) = class(p, pi, s[si])
                        && ok
                    {
                        pi = next;
                        si += 1;
                        continue;
                    }
                }
                '\\' if pi + 1 < p.len() && p[pi + 1] == s[si] => {
                    pi += 2;
                    si += 1;
                    continue;
                }
                c if c == s[si] => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, ss)) => {
                pi = sp + 1;
                si = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Matches `c` against the bracket expression at `p[start]`; (matched, index after it),
/// or `None` when it is not closed (then `[` is literal).
fn class(p: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = matches!(p.get(i), Some('!') | Some('^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            if p[i] <= c && c <= p[i + 2] {
                hit = true;
            }
            i += 3;
        } else {
            if p[i] == c {
                hit = true;
            }
            i += 1;
        }
    }
    None
}

/// Lists the directory at `path` (shown as `shown`) under `prefix`; gives how many
/// entries it showed.
#[allow(
    clippy::too_many_arguments,
    reason = "one recursive walk's state, passed down as is"
)]
async fn walk(
    ctx: &Context,
    o: &Opts,
    path: &str,
    shown: &str,
    prefix: &str,
    depth: usize,
    counts: &mut Counts,
    out: &mut BufOut<'_>,
) -> Result<usize, Interrupt> {
    if o.level.is_some_and(|l| depth > l) || depth > MAX_DEPTH {
        return Ok(0);
    }
    ctx.checkpoint().await?;
    let list = entries(ctx, o, path).await?;
    let (tee, elbow, pipe, blank) = if o.unicode {
        ("├── ", "└── ", "│   ", "    ")
    } else {
        ("|-- ", "`-- ", "|   ", "    ")
    };
    let n = list.len();
    for (idx, (name, meta, is_dir)) in list.into_iter().enumerate() {
        let last = idx + 1 == n;
        let child = format!("{}/{}", path.trim_end_matches('/'), name);
        let child_shown = format!("{}/{}", shown.trim_end_matches('/'), name);
        let mut line = String::new();
        if !o.no_indent {
            line.push_str(prefix);
            line.push_str(if last { elbow } else { tee });
        }
        line.push_str(&info(o, &meta));
        line.push_str(if o.full_path { &child_shown } else { &name });
        if meta.kind == FileKind::Symlink {
            let target = ctx.fs.readlink(&child).await.unwrap_or_default();
            line.push_str(" -> ");
            line.push_str(&target);
            if o.classify && is_dir {
                line.push('/');
            }
        } else if o.classify {
            if is_dir {
                line.push('/');
            } else if meta.mode & 0o111 != 0 {
                line.push('*');
            }
        }
        line.push('\n');
        out.write(line.as_bytes()).await?;
        if is_dir {
            counts.dirs += 1;
            if meta.kind == FileKind::Dir {
                let sub = format!("{prefix}{}", if last { blank } else { pipe });
                Box::pin(walk(
                    ctx,
                    o,
                    &child,
                    &child_shown,
                    &sub,
                    depth + 1,
                    counts,
                    out,
                ))
                .await?;
            }
        } else {
            counts.files += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::FileSystem;
    use crate::testing::{Invocation, MemFs};

    #[tokio::test]
    async fn a_very_deep_tree_is_cut_not_overflowed() {
        let fs = MemFs::new();
        let mut path = String::new();
        for _ in 0..300 {
            path.push_str("/d");
            fs.mkdir(&path).await.unwrap();
        }
        let inv = Invocation {
            fs: fs.clone(),
            ..Invocation::default()
        };
        let (st, out, err) = inv.run(&Tree, &["--noreport", "/d"]).await;
        assert_eq!((st, err.as_str()), (0, ""));
        assert_eq!(out.lines().count(), MAX_DEPTH + 1);
    }

    #[test]
    fn patterns() {
        assert!(matches("*.txt|*.md", "a.md"));
        assert!(matches("[a-c]?", "bz"));
        assert!(!matches("[!a-c]?", "bz"));
        assert!(!matches("*.txt", "a.tx"));
        assert!(matches("a*b*c", "aXbYbc"));
    }
}
