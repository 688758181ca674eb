//! Program text: the `-f` files and `-e`/command-line pieces in order, with gawk's
//! `@include "file"` directives spliced in where they stand, and a table that maps each
//! line of the joined text back to its source name and line (for messages).

use std::collections::HashSet;

use crate::Context;

/// Largest program file read (`-f` or `@include`).
pub const MAX_PROGRAM_BYTES: u64 = 16 * 1024 * 1024;

/// How deeply `@include` may nest (a file including itself is read once anyway).
const MAX_INCLUDE_DEPTH: usize = 64;

/// A piece of program text and where it came from.
pub struct Segment {
    /// `cmd. line` or the file's name as given.
    pub name: String,
    /// The line of that source the segment's first line is.
    pub first_line: usize,
    pub body: Vec<u8>,
    /// Which source (a `-e` piece, a `-f` file, an included file) the text is part of:
    /// an `@namespace` holds to the end of its source.
    pub source: usize,
    depth: usize,
}

impl Segment {
    pub fn new(name: String, body: Vec<u8>) -> Segment {
        Segment {
            name,
            first_line: 1,
            body,
            source: 0,
            depth: 0,
        }
    }
}

/// One row of the line table: lines from `start` (of the joined text) on come from
/// `name`, whose line `first` is `start`.
#[derive(Clone)]
pub struct Row {
    pub name: String,
    pub start: usize,
    pub first: usize,
    /// The segment's source (see [`Segment::source`]).
    pub source: usize,
}

/// Maps a line of the joined text to (source name, line in it).
pub fn locate(table: &[Row], line: usize) -> (String, usize) {
    let mut cur = ("cmd. line".to_string(), line);
    for r in table {
        if line >= r.start {
            cur = (r.name.clone(), line - r.start + r.first);
        }
    }
    cur
}

/// The first `@include "name"` directive standing where a program item may start (at
/// the start of a line, or after `;` or `}`), outside strings and comments: the byte
/// range of the directive and the name.
fn find_include(body: &[u8]) -> Option<(usize, usize, Vec<u8>)> {
    let mut i = 0;
    let mut item_start = true;
    while i < body.len() {
        match body[i] {
            b'"' => {
                i += 1;
                while i < body.len() && body[i] != b'"' && body[i] != b'\n' {
                    if body[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                item_start = false;
            }
            b'#' => {
                while i < body.len() && body[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'\n' | b';' | b'}' => item_start = true,
            b' ' | b'\t' | b'\r' => {}
            b'@' if item_start && body[i..].starts_with(b"@include") => {
                let mut j = i + b"@include".len();
                while j < body.len() && matches!(body[j], b' ' | b'\t') {
                    j += 1;
                }
                if body.get(j) == Some(&b'"') {
                    let s = j + 1;
                    let e = body[s..]
                        .iter()
                        .position(|&b| b == b'"' || b == b'\n')
                        .map(|p| s + p)?;
                    if body[e] == b'"' {
                        return Some((i, e + 1, body[s..e].to_vec()));
                    }
                }
                item_start = false;
            }
            _ => item_start = false,
        }
        i += 1;
    }
    None
}

/// Expands `@include` directives: the result is the segments in program order.
/// An error is gawk's message (status 1).
pub async fn expand(ctx: &Context, sources: Vec<Segment>) -> Result<Vec<Segment>, String> {
    let mut pending: Vec<Segment> = sources
        .into_iter()
        .enumerate()
        .map(|(i, seg)| Segment { source: i, ..seg })
        .rev()
        .collect();
    let mut next_source = pending.len();
    let mut out = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    while let Some(seg) = pending.pop() {
        let Some((s, e, name)) = find_include(&seg.body) else {
            out.push(seg);
            continue;
        };
        let line_start = seg.body[..s]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let line = seg.first_line + seg.body[..s].iter().filter(|&&b| b == b'\n').count();
        let name = String::from_utf8_lossy(&name).into_owned();
        let depth = seg.depth + 1;
        // The rest of the including text, its columns kept.
        let mut rest = vec![b' '; e - line_start];
        rest.extend_from_slice(&seg.body[e..]);
        let rest = Segment {
            name: seg.name.clone(),
            first_line: line,
            body: rest,
            source: seg.source,
            depth: seg.depth,
        };
        if depth > MAX_INCLUDE_DEPTH {
            return Err(format!(
                "awk: {}:{line}: error: `@include' nests too deeply\n",
                seg.name
            ));
        }
        let found = open(ctx, &name).await;
        let src_name = seg.name.clone();
        let before = Segment {
            body: seg.body[..s].to_vec(),
            ..seg
        };
        if before.body.iter().any(|b| !b.is_ascii_whitespace()) {
            out.push(before);
        }
        pending.push(rest);
        match found {
            Ok((path, body)) => {
                if seen.insert(path) {
                    pending.push(Segment {
                        name,
                        first_line: 1,
                        body,
                        source: next_source,
                        depth,
                    });
                    next_source += 1;
                }
            }
            Err(why) => {
                return Err(format!(
                    "awk: {src_name}:{line}: error: cannot open source file `{name}' for reading: {why}\n"
                ));
            }
        }
    }
    Ok(out)
}

/// Finds and reads an included file as gawk does: the name as given, then with `.awk`
/// added, in each directory of `AWKPATH` (default `.:/usr/share/awk`) unless the name
/// has a `/`. Gives the resolved path (to include each file once) and its text.
pub async fn open(ctx: &Context, name: &str) -> Result<(String, Vec<u8>), String> {
    let mut candidates = Vec::new();
    let names = if name.ends_with(".awk") {
        vec![name.to_string()]
    } else {
        vec![name.to_string(), format!("{name}.awk")]
    };
    if name.contains('/') {
        candidates.extend(names);
    } else {
        let awkpath = ctx
            .env
            .iter()
            .find(|(k, _)| k.as_str() == "AWKPATH")
            .map_or(".:/usr/share/awk".to_string(), |(_, v)| v.clone());
        for n in &names {
            for dir in awkpath.split(':') {
                let dir = if dir.is_empty() { "." } else { dir };
                candidates.push(format!("{dir}/{n}"));
            }
        }
    }
    let mut first_err = None;
    for c in candidates {
        let p = ctx.path(&c);
        match crate::fs::read_all(ctx.fs.as_ref(), &p, MAX_PROGRAM_BYTES).await {
            Ok(b) => return Ok((p, b)),
            Err(e) => {
                if first_err.is_none() {
                    first_err = Some(e.to_string());
                }
            }
        }
    }
    Err(first_err.unwrap_or_else(|| "No such file or directory".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_directives_outside_strings_and_comments() {
        assert_eq!(
            find_include(b"@include \"lib\"\nBEGIN{}"),
            Some((0, 14, b"lib".to_vec()))
        );
        assert_eq!(
            find_include(b"BEGIN { print \"@include \\\"x\\\"\" }"),
            None
        );
        assert_eq!(find_include(b"# @include \"x\"\n"), None);
        assert_eq!(
            find_include(b"BEGIN{} @include \"x\""),
            Some((8, 20, b"x".to_vec()))
        );
        assert_eq!(find_include(b"x = a @include \"y\""), None);
    }

    #[test]
    fn locates_lines_across_segments() {
        let t = vec![
            Row {
                name: "main".into(),
                start: 1,
                first: 1,
                source: 0,
            },
            Row {
                name: "lib".into(),
                start: 2,
                first: 1,
                source: 1,
            },
            Row {
                name: "main".into(),
                start: 5,
                first: 2,
                source: 0,
            },
        ];
        assert_eq!(locate(&t, 1), ("main".to_string(), 1));
        assert_eq!(locate(&t, 3), ("lib".to_string(), 2));
        assert_eq!(locate(&t, 6), ("main".to_string(), 3));
    }
}
