//! Pathname expansion over the session's filesystem: patterns as the shell options say,
//! `dotglob`, `nocaseglob`, `globstar` (`**`) and `GLOBIGNORE`.

use super::*;
use forkbox_commands::bytetext;

impl Shell {
    /// A pattern as the shell options say (`extglob`), matching either case if `nocase`.
    pub(crate) fn pattern(&self, text: &str, nocase: bool) -> Pattern {
        Pattern::with(text, self.shopts.on("extglob"), nocase).in_locale(!self.byte_locale())
    }

    /// Pathname expansion of a pattern over the filesystem; sorted; empty if nothing
    /// matches. `dotglob`, `nocaseglob`, `globstar` and `GLOBIGNORE` apply.
    pub(crate) async fn glob(&self, pat: &str) -> Vec<String> {
        let mut out = self.glob_paths(pat).await;
        let ignore = self.get_str("GLOBIGNORE").filter(|g| !g.is_empty());
        if let Some(ignore) = ignore {
            let pats: Vec<Pattern> = ignore.split(':').map(|p| self.pattern(p, false)).collect();
            out.retain(|path| {
                let base = path.rsplit('/').next().unwrap_or(path);
                base != "." && base != ".." && !pats.iter().any(|p| p.matches(path))
            });
        }
        out
    }

    pub(crate) async fn glob_paths(&self, pat: &str) -> Vec<String> {
        // A non-empty GLOBIGNORE turned `dotglob` on when it was set (see `store_str`).
        let dotglob = self.shopts.on("dotglob");
        let nocase = self.shopts.on("nocaseglob");
        let globstar = self.shopts.on("globstar");
        let absolute = pat.starts_with('/');
        let comps: Vec<&str> = pat.split('/').collect();
        // (shown path, filesystem path)
        let mut cands: Vec<(String, String)> = if absolute {
            vec![("/".to_string(), "/".to_string())]
        } else {
            vec![(String::new(), self.cwd.clone())]
        };
        let comps: Vec<&str> = if absolute { comps[1..].to_vec() } else { comps };
        let n = comps.len();
        for (i, comp) in comps.iter().enumerate() {
            let last = i + 1 == n;
            let mut next = Vec::new();
            if comp.is_empty() {
                for (shown, path) in cands {
                    if !shown.is_empty() && !shown.ends_with('/') {
                        next.push((format!("{shown}/"), path));
                    } else {
                        next.push((shown, path));
                    }
                }
                cands = next;
                continue;
            }
            if !pattern::has_glob_chars(comp) {
                let lit = pattern::unescape(comp);
                for (shown, path) in cands {
                    let shown = join_shown(&shown, &lit);
                    let path = forkbox_commands::fs::join(&path, &lit);
                    if last {
                        if self.fs.lstat(&path).await.is_ok() {
                            next.push((shown, path));
                        }
                    } else {
                        next.push((shown, path));
                    }
                }
            } else if globstar && *comp == "**" {
                // Every directory below (and, last, every file), the start included: shown
                // with a slash after a literal directory (`a/**` gives `a/`), without one
                // after a matched one (`*/**` gives `a`), as bash shows them.
                let literal = comps[..i].iter().all(|c| !pattern::has_glob_chars(c));
                for (shown, path) in cands {
                    if last && !literal && !shown.is_empty() {
                        if !matches!(self.fs.stat(&path).await, Ok(m) if m.is_dir()) {
                            continue;
                        }
                        next.push((shown.clone(), path.clone()));
                        self.walk(&shown, &path, last, &mut next, dotglob, false)
                            .await;
                    } else {
                        self.walk(&shown, &path, last, &mut next, dotglob, true)
                            .await;
                    }
                }
            } else {
                let p = self.pattern(comp, nocase);
                // `.` and `..` are no directory entries here; with `globskipdots` off a
                // pattern that starts with a dot matches them, as in bash.
                let dots = !self.shopts.on("globskipdots") && p.starts_with_dot();
                for (shown, path) in cands {
                    let Ok(entries) = self.fs.read_dir(&path).await else {
                        continue;
                    };
                    if dots {
                        for name in [".", ".."] {
                            if p.matches(name) {
                                let child = forkbox_commands::fs::join(&path, name);
                                next.push((join_shown(&shown, name), child));
                            }
                        }
                    }
                    for e in entries {
                        if e.name.starts_with('.') && !p.may_match_dot() && !dotglob {
                            continue;
                        }
                        if !p.matches(&e.name) {
                            continue;
                        }
                        let child = forkbox_commands::fs::join(&path, &e.name);
                        if !last {
                            match self.fs.stat(&child).await {
                                Ok(m) if m.is_dir() => {}
                                _ => continue,
                            }
                        }
                        next.push((join_shown(&shown, &e.name), child));
                    }
                }
            }
            cands = next;
            if cands.is_empty() {
                return Vec::new();
            }
        }
        // `**/` also yields the start of a relative pattern, which is no name.
        let mut out: Vec<String> = cands
            .into_iter()
            .map(|(s, _)| s)
            .filter(|s| !s.is_empty())
            .collect();
        if out.iter().any(|s| bytetext::may_have_bytes(s)) {
            // Names with bytes that are not UTF-8 sort by those bytes.
            out.sort_by(|a, b| bytetext::encode(a).cmp(&bytetext::encode(b)));
        } else {
            out.sort();
        }
        out
    }
}

impl Shell {
    /// `**` of `globstar`: `shown` itself (unless it is the start of a relative pattern
    /// that ends here) and every directory below it, or with `files` every entry below it.
    pub(crate) fn walk<'a>(
        &'a self,
        shown: &'a str,
        path: &'a str,
        files: bool,
        out: &'a mut Vec<(String, String)>,
        dotglob: bool,
        top: bool,
    ) -> crate::shell::BoxFut<'a, ()> {
        Box::pin(async move {
            // A start that is no directory (a literal name after an earlier `**` that
            // names nothing there) yields nothing.
            let Ok(mut entries) = self.fs.read_dir(path).await else {
                return;
            };
            if top && !files {
                out.push((shown.to_string(), path.to_string()));
            } else if top && !shown.is_empty() {
                out.push((join_shown(shown, ""), path.to_string()));
            }
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            for e in entries {
                if e.name.starts_with('.') && !dotglob {
                    continue;
                }
                let child = forkbox_commands::fs::join(path, &e.name);
                let child_shown = join_shown(shown, &e.name);
                let is_dir = matches!(self.fs.lstat(&child).await, Ok(m) if m.is_dir());
                if is_dir {
                    out.push((child_shown.clone(), child.clone()));
                    self.walk(&child_shown, &child, files, out, dotglob, false)
                        .await;
                } else if files {
                    out.push((child_shown, child));
                }
            }
        })
    }
}

pub(crate) fn join_shown(shown: &str, name: &str) -> String {
    if shown.is_empty() {
        name.to_string()
    } else if shown.ends_with('/') {
        format!("{shown}{name}")
    } else {
        format!("{shown}/{name}")
    }
}
