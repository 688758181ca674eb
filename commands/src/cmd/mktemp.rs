//! `mktemp`: create a file (mode 0600) or directory (0700) with a unique name made from a
//! template whose trailing X's are replaced by random letters and digits, GNU-style. The
//! file is created exclusively ([`WriteMode::CreateNew`]) and a name already taken is
//! retried with new letters. Hand-parsed: `--tmpdir` takes an optional value.

use async_trait::async_trait;

use super::getopt::{Arg, Spec, opt, parse};
use super::util::quote;
use crate::fs::{FsError, WriteMode};
use crate::{CmdResult, Command, Context};

const HELP: &str = "Usage: mktemp [OPTION]... [TEMPLATE]
Create a temporary file or directory, safely, and print its name.
TEMPLATE must contain at least 3 consecutive 'X's in last component.
If TEMPLATE is not specified, use tmp.XXXXXXXXXX, and --tmpdir is implied.
Files are created u+rw, and directories u+rwx, minus umask restrictions.

  -d, --directory     create a directory, not a file
  -u, --dry-run       do not create anything; merely print a name (unsafe)
  -q, --quiet         suppress diagnostics about file/dir-creation failure
      --suffix=SUFF   append SUFF to TEMPLATE; SUFF must not contain a slash.
                        This option is implied if TEMPLATE does not end in X
  -p DIR, --tmpdir[=DIR]  interpret TEMPLATE relative to DIR; if DIR is not
                        specified, use $TMPDIR if set, else /tmp.  With
                        this option, TEMPLATE must not be an absolute name;
                        unlike with -t, TEMPLATE may contain slashes, but
                        mktemp creates only the final component
  -t                  interpret TEMPLATE as a single file name component,
                        relative to a directory: $TMPDIR, if set; else the
                        directory specified via -p; else /tmp [deprecated]
      --help          display this help and exit
";

/// Names tried before giving up when every one is taken.
const ATTEMPTS: u32 = 1000;

const LETTERS: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

pub struct Mktemp;

#[derive(Default)]
struct Opts {
    dir: bool,
    dry: bool,
    quiet: bool,
    suffix: Option<String>,
    /// `-p DIR` / `--tmpdir[=DIR]`: `Some(None)` for `--tmpdir` without a value.
    tmpdir: Option<Option<String>>,
    t: bool,
    templates: Vec<String>,
}

async fn usage(ctx: &Context, msg: &str) -> CmdResult {
    Ok(super::util::usage_error(ctx, "mktemp", msg).await)
}

#[async_trait]
impl Command for Mktemp {
    fn name(&self) -> &'static str {
        "mktemp"
    }
    fn summary(&self) -> &'static str {
        "create a temporary file or directory"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        const SPECS: [Spec; 9] = [
            opt('d', Some('d'), Some("directory"), Arg::No),
            opt('u', Some('u'), Some("dry-run"), Arg::No),
            opt('q', Some('q'), Some("quiet"), Arg::No),
            opt('S', None, Some("suffix"), Arg::Required),
            opt('p', Some('p'), None, Arg::Required),
            opt('P', None, Some("tmpdir"), Arg::Optional),
            opt('t', Some('t'), None, Arg::No),
            opt('h', None, Some("help"), Arg::No),
            opt('V', None, Some("version"), Arg::No),
        ];
        let parsed = match parse(&SPECS, &args, true) {
            Ok(p) => p,
            Err(msg) => return usage(ctx, &msg).await,
        };
        let mut o = Opts {
            templates: parsed.operands,
            ..Opts::default()
        };
        for (key, val) in parsed.opts {
            match key {
                'd' => o.dir = true,
                'u' => o.dry = true,
                'q' => o.quiet = true,
                't' => o.t = true,
                'S' => o.suffix = val,
                'p' | 'P' => o.tmpdir = Some(val),
                'h' => {
                    ctx.out(HELP).await?;
                    return Ok(0);
                }
                _ => {
                    ctx.out("mktemp (GNU coreutils) 9.1\n").await?;
                    return Ok(0);
                }
            }
        }
        create(ctx, o).await
    }
}

async fn create(ctx: &Context, o: Opts) -> CmdResult {
    if o.templates.len() > 1 {
        return usage(ctx, "too many templates").await;
    }
    let implied = o.templates.is_empty();
    let template = o
        .templates
        .first()
        .cloned()
        .unwrap_or_else(|| "tmp.XXXXXXXXXX".to_string());
    // The suffix: --suffix, else what follows the last X.
    let (base, suffix) = match &o.suffix {
        Some(s) => {
            if s.contains('/') {
                ctx.warn(
                    "mktemp",
                    format!("invalid suffix {}, contains directory separator", quote(s)),
                )
                .await;
                return Ok(1);
            }
            (template.clone(), s.clone())
        }
        None => match template.rfind('X') {
            Some(p) => (template[..=p].to_string(), template[p + 1..].to_string()),
            None => (template.clone(), String::new()),
        },
    };
    let xs = base.len() - base.trim_end_matches('X').len();
    let full_template = format!("{base}{suffix}");
    if xs < 3 {
        ctx.warn(
            "mktemp",
            format!("too few X's in template {}", quote(&full_template)),
        )
        .await;
        return Ok(1);
    }
    let env_tmp = ctx.env.get("TMPDIR").filter(|s| !s.is_empty()).cloned();
    let dir: Option<String> = if o.t {
        if template.contains('/') {
            ctx.warn(
                "mktemp",
                format!(
                    "invalid template, {}, contains directory separator",
                    quote(&full_template)
                ),
            )
            .await;
            return Ok(1);
        }
        Some(
            env_tmp
                .or_else(|| o.tmpdir.clone().flatten().filter(|s| !s.is_empty()))
                .unwrap_or_else(|| "/tmp".into()),
        )
    } else if o.tmpdir.is_some() || implied {
        Some(match o.tmpdir.clone().flatten().filter(|s| !s.is_empty()) {
            Some(d) => d,
            None => env_tmp.unwrap_or_else(|| "/tmp".into()),
        })
    } else {
        None
    };
    if dir.is_some() && template.starts_with('/') {
        ctx.warn(
            "mktemp",
            format!(
                "invalid template, {}; with --tmpdir, it may not be absolute",
                quote(&full_template)
            ),
        )
        .await;
        return Ok(1);
    }
    let shown_template = match &dir {
        Some(d) if d.ends_with('/') => format!("{d}{full_template}"),
        Some(d) => format!("{d}/{full_template}"),
        None => full_template.clone(),
    };
    let stem = &shown_template[..shown_template.len() - suffix.len() - xs];
    let mut last_err = FsError::AlreadyExists;
    for _ in 0..ATTEMPTS {
        ctx.checkpoint().await?;
        let name = format!("{stem}{}{suffix}", random_letters(xs));
        let path = ctx.path(&name);
        if o.dry {
            match ctx.fs.lstat(&path).await {
                Ok(_) => continue,
                Err(_) => {
                    ctx.out(format!("{name}\n")).await?;
                    return Ok(0);
                }
            }
        }
        let made = if o.dir {
            match ctx.fs.mkdir(&path).await {
                Ok(()) => ctx.fs.chmod(&path, 0o700).await,
                Err(e) => Err(e),
            }
        } else {
            match ctx.fs.open_write(&path, WriteMode::CreateNew).await {
                Ok(h) => match h.close().await {
                    Ok(()) => ctx.fs.chmod(&path, 0o600).await,
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            }
        };
        match made {
            Ok(()) => {
                ctx.out(format!("{name}\n")).await?;
                return Ok(0);
            }
            Err(FsError::AlreadyExists) => continue,
            Err(e) => {
                last_err = e;
                break;
            }
        }
    }
    if !o.quiet {
        let what = if o.dir { "directory" } else { "file" };
        ctx.warn(
            "mktemp",
            format!(
                "failed to create {what} via template {}: {last_err}",
                quote(&shown_template)
            ),
        )
        .await;
    }
    Ok(1)
}

fn random_letters(n: usize) -> String {
    let mut s = String::with_capacity(n);
    while s.len() < n {
        // 248 = 4 * 62: rejecting the rest keeps every letter equally likely.
        let b: u8 = rand::random();
        if b < 248 {
            s.push(LETTERS[usize::from(b % 62)] as char);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn creates_private_file_and_dir() {
        let inv = Invocation::default();
        let (st, out, _) = inv.run(&Mktemp, &["-p", "/", "f.XXXX"]).await;
        assert_eq!(st, 0);
        let name = out.trim_end();
        assert!(name.starts_with("/f.") && name.len() == 7, "{name}");
        let meta = inv.fs.stat(name).await;
        assert_eq!(meta.map(|m| (m.is_file(), m.mode)), Ok((true, 0o600)));
        let (_, out, _) = inv.run(&Mktemp, &["-d", "-p", "/", "d.XXX"]).await;
        let meta = inv.fs.stat(out.trim_end()).await;
        assert_eq!(meta.map(|m| (m.is_dir(), m.mode)), Ok((true, 0o700)));
    }

    #[tokio::test]
    async fn template_errors() {
        let inv = Invocation::default();
        let (st, _, err) = inv.run(&Mktemp, &["x.XX"]).await;
        assert_eq!(
            (st, err.as_str()),
            (1, "mktemp: too few X's in template 'x.XX'\n")
        );
        let (st, _, err) = inv.run(&Mktemp, &["-q", "/nodir/a.XXX"]).await;
        assert_eq!((st, err.as_str()), (1, ""));
    }
}
