//! [`VfsPath`]: a path as the filesystem port accepts it, validated once at the boundary.

use std::fmt;

use super::{FsError, FsResult};

/// Longest name of one path component, as Linux's `NAME_MAX`.
pub const NAME_MAX: usize = 255;
/// Longest path accepted, as Linux's `PATH_MAX` (the terminating NUL not counted).
pub const PATH_MAX: usize = 4096;

/// An absolute path inside a session's root, as the filesystem port takes it.
///
/// Invariants, checked by [`VfsPath::new`]: it starts with `/`; it holds no NUL byte; no
/// component is longer than [`NAME_MAX`] bytes and the whole is at most [`PATH_MAX`]
/// bytes. It is normalised: no empty (`//`) or `.` components and no trailing `/`, so
/// `as_str` is `/` or `/a/b`. `..` components are kept: whether `a/..` is `/` or not
/// depends on what `a` is (a symlink to a directory elsewhere), so only the resolver,
/// which walks the real tree, may apply them (as POSIX does).
///
/// A trailing `/` (or a last component `.` or `..`) means the path must name a directory;
/// [`VfsPath::must_be_dir`] remembers it, so `file/` still fails with "Not a directory".
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VfsPath {
    path: String,
    dir: bool,
}

impl VfsPath {
    /// The root, `/`.
    pub fn root() -> VfsPath {
        VfsPath {
            path: "/".to_string(),
            dir: true,
        }
    }

    /// Validates and normalises `path`. Fails with `InvalidArgument` when it is relative
    /// or holds a NUL byte, with `NameTooLong` past [`NAME_MAX`] or [`PATH_MAX`], and
    /// with `NotFound` when it is empty (as `open("")` does).
    pub fn new(path: &str) -> FsResult<VfsPath> {
        if path.is_empty() {
            return Err(FsError::NotFound);
        }
        if !path.starts_with('/') || path.contains('\0') {
            return Err(FsError::InvalidArgument);
        }
        if path.len() > PATH_MAX {
            return Err(FsError::NameTooLong);
        }
        let mut out = String::with_capacity(path.len());
        let mut last = "";
        for comp in path.split('/') {
            last = comp;
            match comp {
                "" | "." => continue,
                c if c.len() > NAME_MAX => return Err(FsError::NameTooLong),
                c => {
                    out.push('/');
                    out.push_str(c);
                }
            }
        }
        if out.is_empty() {
            out.push('/');
        }
        let dir = out == "/" || matches!(last, "" | "." | "..");
        Ok(VfsPath { path: out, dir })
    }

    /// The normalised path (`/`, `/a/b`), without the trailing `/` of a directory path.
    pub fn as_str(&self) -> &str {
        &self.path
    }

    /// True when the path must name a directory (it ended with `/`, `.` or `..`).
    pub fn must_be_dir(&self) -> bool {
        self.dir
    }

    /// True for `/` itself.
    pub fn is_root(&self) -> bool {
        self.path == "/"
    }

    /// The components after `/`, in order (`..` included).
    pub fn components(&self) -> impl DoubleEndedIterator<Item = &str> {
        self.path.split('/').filter(|c| !c.is_empty())
    }

    /// The last component, or `None` for `/`.
    pub fn file_name(&self) -> Option<&str> {
        self.components().next_back()
    }

    /// The path without its last component (lexically; `/` for `/` and `/a`).
    pub fn parent(&self) -> VfsPath {
        let cut = self.path.rfind('/').unwrap_or(0);
        let parent = if cut == 0 { "/" } else { &self.path[..cut] };
        VfsPath {
            path: parent.to_string(),
            dir: true,
        }
    }

    /// This path with `name` (one or more components, validated) appended.
    pub fn join(&self, name: &str) -> FsResult<VfsPath> {
        if name.starts_with('/') {
            return Err(FsError::InvalidArgument);
        }
        VfsPath::new(&format!("{}/{name}", self.path.trim_end_matches('/')))
    }
}

impl fmt::Display for VfsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)?;
        if self.dir && self.path != "/" {
            f.write_str("/")?;
        }
        Ok(())
    }
}

impl fmt::Debug for VfsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VfsPath({self})")
    }
}

impl TryFrom<&str> for VfsPath {
    type Error = FsError;
    fn try_from(path: &str) -> FsResult<VfsPath> {
        VfsPath::new(path)
    }
}

impl AsRef<str> for VfsPath {
    fn as_ref(&self) -> &str {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_and_validates() {
        let p = VfsPath::new("//a/./b//").unwrap();
        assert_eq!((p.as_str(), p.must_be_dir()), ("/a/b", true));
        assert_eq!(p.to_string(), "/a/b/");
        let p = VfsPath::new("/a/../b").unwrap();
        assert_eq!((p.as_str(), p.must_be_dir()), ("/a/../b", false));
        assert!(VfsPath::new("/a/..").unwrap().must_be_dir());
        assert!(VfsPath::new("/").unwrap().is_root());
        assert_eq!(VfsPath::new("/.").unwrap().as_str(), "/");
        assert_eq!(VfsPath::new(""), Err(FsError::NotFound));
        assert_eq!(VfsPath::new("a/b"), Err(FsError::InvalidArgument));
        assert_eq!(VfsPath::new("/a\0b"), Err(FsError::InvalidArgument));
        let long = "x".repeat(NAME_MAX + 1);
        assert_eq!(VfsPath::new(&format!("/{long}")), Err(FsError::NameTooLong));
        assert!(VfsPath::new(&format!("/{}", "x".repeat(NAME_MAX))).is_ok());
        let deep = "/ab".repeat(PATH_MAX / 3 + 1);
        assert_eq!(VfsPath::new(&deep), Err(FsError::NameTooLong));
    }

    #[test]
    fn parts() {
        let p = VfsPath::new("/a/b/c").unwrap();
        assert_eq!(p.file_name(), Some("c"));
        assert_eq!(p.parent().as_str(), "/a/b");
        assert_eq!(VfsPath::new("/a").unwrap().parent().as_str(), "/");
        assert_eq!(VfsPath::root().file_name(), None);
        assert_eq!(p.components().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(p.join("d/e").unwrap().as_str(), "/a/b/c/d/e");
        assert_eq!(p.join("/x"), Err(FsError::InvalidArgument));
    }
}
