//! The one path resolver of the port, shared by every filesystem that implements it (the
//! session's `Vfs`, [`crate::testing::MemFs`]), so the two cannot disagree on what a path
//! names.
//!
//! [`Walk`] holds the rules and does no I/O: it asks for the entry at one root-relative
//! path at a time ([`Walk::step`]) and is told what is there ([`Walk::answer`]). A
//! filesystem drives it with its own lookup: synchronously under a lock
//! ([`resolve_with`]) or asynchronously over storage ([`resolve`] and [`Lookup`]).
//!
//! The rules, as Linux's: components are walked left to right from `/`; `..` climbs to
//! the parent of the directory reached so far (never above `/`), after symlinks, so
//! `link/..` is the parent of the link's target; a symlink is replaced by its target
//! (absolute targets restart at the session root, so nothing resolves outside it), for
//! every component but the last, and for the last one when asked to follow; at most
//! [`MAX_SYMLINK_HOPS`] symlinks per path ("Too many levels of symbolic links"); an
//! intermediate component that is missing is "No such file or directory" and one that is
//! not a directory "Not a directory"; the last component may be missing (a path to
//! create); a path that must be a directory ([`VfsPath::must_be_dir`]) and names a
//! non-directory is "Not a directory".

use async_trait::async_trait;

use super::path::{NAME_MAX, VfsPath};
use super::{FileKind, FsError, FsResult};

/// Symlinks one path may go through before its resolution fails with
/// [`FsError::Loop`], as Linux's `MAXSYMLINKS`: a cycle must end in an error, not a hang.
pub const MAX_SYMLINK_HOPS: usize = 40;

/// What the resolver needs to know of an entry.
pub trait Entry: Clone {
    fn kind(&self) -> FileKind;
    /// The target of a symlink (`None` for anything else).
    fn symlink_target(&self) -> Option<&str>;
}

/// Whether the last component is followed when it is a symlink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    /// Like `stat`/`open`: the path names what the symlink points at.
    Yes,
    /// Like `lstat`/`O_NOFOLLOW`/`unlink`: the path names the symlink itself.
    No,
}

/// Where a path led: its physical root-relative path (`""` for `/`, else `a/b`, no
/// symlink in it) and what is there, if anything. Every ancestor exists and is a
/// directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved<N> {
    pub rel: String,
    pub node: Option<N>,
}

impl<N> Resolved<N> {
    /// The absolute form of [`Resolved::rel`] (`/`, `/a/b`).
    pub fn abs(&self) -> String {
        format!("/{}", self.rel)
    }

    /// The node, or `NotFound` when nothing is there.
    pub fn existing(self) -> FsResult<(String, N)> {
        match self.node {
            Some(n) => Ok((self.rel, n)),
            None => Err(FsError::NotFound),
        }
    }
}

/// One resolution in progress (see the module documentation).
#[derive(Debug)]
pub struct Walk<N> {
    /// Components still to walk, the next one last.
    pending: Vec<String>,
    /// The walk so far, root-relative.
    rel: String,
    /// Length of `rel` before the component being looked up (to back out of a symlink).
    parent_len: usize,
    /// The component being looked up is the path's last.
    is_last: bool,
    hops: usize,
    follow: bool,
    dir_required: bool,
    /// What `rel` names, when known without asking (after `..` or a symlink it is not).
    here: Option<N>,
    /// Waiting for the answer about `rel` (a component), or for the final lookup.
    state: State,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Walking,
    AwaitComponent,
    AwaitFinal,
}

/// What the walk needs next.
#[derive(Debug, PartialEq, Eq)]
pub enum Step<N> {
    /// Tell [`Walk::answer`] what is at this root-relative path.
    Lookup(String),
    /// The walk is over.
    Done(Resolved<N>),
}

impl<N: Entry> Walk<N> {
    /// Starts resolving `path` from the root, which is `root`.
    pub fn new(path: &VfsPath, follow: Follow, root: N) -> Walk<N> {
        Walk {
            pending: path.components().rev().map(str::to_string).collect(),
            rel: String::new(),
            parent_len: 0,
            is_last: false,
            hops: 0,
            // A path that must be a directory follows a last symlink (`link/`).
            follow: follow == Follow::Yes || path.must_be_dir(),
            dir_required: path.must_be_dir(),
            here: Some(root),
            state: State::Walking,
        }
    }

    /// What to do next: look something up, or the result.
    pub fn step(&mut self) -> FsResult<Step<N>> {
        debug_assert_eq!(self.state, State::Walking, "answer the last lookup first");
        while let Some(comp) = self.pending.pop() {
            match comp.as_str() {
                "" | "." => continue,
                ".." => {
                    self.rel.truncate(self.rel.rfind('/').unwrap_or(0));
                    self.here = None;
                    continue;
                }
                _ => {}
            }
            if comp.len() > NAME_MAX {
                return Err(FsError::NameTooLong);
            }
            self.parent_len = self.rel.len();
            if !self.rel.is_empty() {
                self.rel.push('/');
            }
            self.rel.push_str(&comp);
            self.is_last = self.pending.iter().all(|p| p.is_empty() || p == ".");
            self.state = State::AwaitComponent;
            return Ok(Step::Lookup(self.rel.clone()));
        }
        match self.here.take() {
            Some(n) => self.finish(Some(n)),
            None => {
                self.state = State::AwaitFinal;
                Ok(Step::Lookup(self.rel.clone()))
            }
        }
    }

    /// What is at the path [`Walk::step`] asked about (`None`: nothing).
    pub fn answer(&mut self, node: Option<N>) -> FsResult<Option<Step<N>>> {
        match std::mem::replace(&mut self.state, State::Walking) {
            State::Walking => Err(FsError::InvalidArgument),
            State::AwaitFinal => self.finish(node).map(Some),
            State::AwaitComponent => {
                match node {
                    Some(n) if n.kind() == FileKind::Symlink && (self.follow || !self.is_last) => {
                        self.hops += 1;
                        if self.hops > MAX_SYMLINK_HOPS {
                            return Err(FsError::Loop);
                        }
                        let target = n.symlink_target().unwrap_or_default();
                        if target.is_empty() {
                            return Err(FsError::NotFound);
                        }
                        self.rel.truncate(self.parent_len);
                        if target.starts_with('/') {
                            self.rel.clear();
                        }
                        // A target ending in `/` must be a directory, like a path that does.
                        if self.is_last && target.ends_with('/') {
                            self.dir_required = true;
                        }
                        self.pending
                            .extend(target.split('/').rev().map(str::to_string));
                        self.here = None;
                    }
                    Some(n) if self.is_last || n.kind() == FileKind::Dir => self.here = Some(n),
                    Some(_) => return Err(FsError::NotADirectory),
                    None if self.is_last => {
                        self.here = None;
                        // Nothing there: the walk is over without a final lookup.
                        if self.pending.iter().all(|p| p.is_empty() || p == ".") {
                            return self.finish(None).map(Some);
                        }
                    }
                    None => return Err(FsError::NotFound),
                }
                Ok(None)
            }
        }
    }

    fn finish(&mut self, node: Option<N>) -> FsResult<Step<N>> {
        if self.dir_required
            && let Some(n) = &node
            && n.kind() != FileKind::Dir
        {
            return Err(FsError::NotADirectory);
        }
        Ok(Step::Done(Resolved {
            rel: std::mem::take(&mut self.rel),
            node,
        }))
    }
}

/// Resolves `path` with a synchronous lookup of root-relative paths (a filesystem that
/// holds its tree under a lock).
pub fn resolve_with<N: Entry>(
    path: &VfsPath,
    follow: Follow,
    root: N,
    mut lookup: impl FnMut(&str) -> FsResult<Option<N>>,
) -> FsResult<Resolved<N>> {
    let mut walk = Walk::new(path, follow, root);
    loop {
        match walk.step()? {
            Step::Done(r) => return Ok(r),
            Step::Lookup(rel) => {
                if let Some(Step::Done(r)) = walk.answer(lookup(&rel)?)? {
                    return Ok(r);
                }
            }
        }
    }
}

/// A filesystem's asynchronous lookup, for [`resolve`].
#[async_trait]
pub trait Lookup: Sync {
    type Node: Entry + Send;
    /// The root directory.
    fn root(&self) -> Self::Node;
    /// What is at the root-relative path `rel` (not `""`), without following it.
    async fn lookup(&self, rel: &str) -> FsResult<Option<Self::Node>>;
}

/// Resolves `path` over an asynchronous lookup (a filesystem over storage).
pub async fn resolve<L: Lookup + ?Sized>(
    fs: &L,
    path: &VfsPath,
    follow: Follow,
) -> FsResult<Resolved<L::Node>> {
    let mut walk = Walk::new(path, follow, fs.root());
    loop {
        match walk.step()? {
            Step::Done(r) => return Ok(r),
            Step::Lookup(rel) => {
                let node = fs.lookup(&rel).await?;
                if let Some(Step::Done(r)) = walk.answer(node)? {
                    return Ok(r);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[derive(Clone, Debug, PartialEq, Eq)]
    enum E {
        Dir,
        File,
        Link(&'static str),
    }

    impl Entry for E {
        fn kind(&self) -> FileKind {
            match self {
                E::Dir => FileKind::Dir,
                E::File => FileKind::File,
                E::Link(_) => FileKind::Symlink,
            }
        }
        fn symlink_target(&self) -> Option<&str> {
            match self {
                E::Link(t) => Some(t),
                _ => None,
            }
        }
    }

    fn tree() -> BTreeMap<&'static str, E> {
        BTreeMap::from([
            ("a", E::Dir),
            ("a/f", E::File),
            ("a/b", E::Dir),
            ("a/up", E::Link("..")),
            ("abs", E::Link("/a/b")),
            ("dangle", E::Link("nowhere")),
            ("loop", E::Link("loop")),
            ("out", E::Link("../../../a/f")),
            ("tofile", E::Link("a/f/")),
        ])
    }

    fn res(path: &str, follow: Follow) -> FsResult<(String, Option<E>)> {
        let t = tree();
        let p = VfsPath::new(path)?;
        resolve_with(&p, follow, E::Dir, |rel| Ok(t.get(rel).cloned())).map(|r| (r.rel, r.node))
    }

    #[test]
    fn walks_like_linux() {
        assert_eq!(res("/", Follow::Yes), Ok((String::new(), Some(E::Dir))));
        assert_eq!(res("/a/f", Follow::Yes), Ok(("a/f".into(), Some(E::File))));
        assert_eq!(
            res("/../a/./b/..", Follow::Yes),
            Ok(("a".into(), Some(E::Dir)))
        );
        assert_eq!(res("/a/new", Follow::Yes), Ok(("a/new".into(), None)));
        assert_eq!(res("/a/f/x", Follow::Yes), Err(FsError::NotADirectory));
        assert_eq!(res("/a/f/", Follow::Yes), Err(FsError::NotADirectory));
        assert_eq!(res("/a/f/..", Follow::Yes), Err(FsError::NotADirectory));
        assert_eq!(res("/no/x", Follow::Yes), Err(FsError::NotFound));
        // Symlinks: followed in the middle, at the end only when asked.
        assert_eq!(res("/abs", Follow::Yes), Ok(("a/b".into(), Some(E::Dir))));
        assert_eq!(
            res("/abs", Follow::No),
            Ok(("abs".into(), Some(E::Link("/a/b"))))
        );
        assert_eq!(res("/abs/", Follow::No), Ok(("a/b".into(), Some(E::Dir))));
        assert_eq!(res("/abs/..", Follow::No), Ok(("a".into(), Some(E::Dir))));
        assert_eq!(
            res("/a/up/a/f", Follow::Yes),
            Ok(("a/f".into(), Some(E::File)))
        );
        // `..` in a target never leaves the root.
        assert_eq!(res("/out", Follow::Yes), Ok(("a/f".into(), Some(E::File))));
        assert_eq!(res("/dangle", Follow::Yes), Ok(("nowhere".into(), None)));
        assert_eq!(res("/loop", Follow::Yes), Err(FsError::Loop));
        assert_eq!(res("/loop/x", Follow::No), Err(FsError::Loop));
        assert_eq!(res("/tofile", Follow::Yes), Err(FsError::NotADirectory));
    }
}
