//! The WASI tool manifest (`wasm/manifest.toml`, embedded in the binary) and what a
//! server finds provisioned of it in its `--wasm-dir`.
//!
//! [`Manifest::embedded`] parses and validates the manifest; [`Manifest::check`] looks for
//! each tool's module and mounts where `wasm/provision` installs them
//! (`<wasm dir>/pkg/<source>-<version>-<sha256[:12]>/`) and checks them against the
//! manifest's sha256. A file is hashed unless the provisioning stamp beside it records the
//! manifest's sha256 with the file's current size and modification time (so a start-up
//! does not rehash a few hundred megabytes); anything missing or different makes the tool
//! [`Unprovisioned`], whose reason names `wasm/provision`. Nothing here downloads anything.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The manifest the binary was built with.
pub const MANIFEST: &str = include_str!("../../wasm/manifest.toml");

/// The stamp `wasm/provision` leaves in each install directory: one line per file,
/// `<sha256> <size> <mtime in ns since the epoch> <path in the install>`.
pub const STAMP: &str = ".forkbox-provisioned";

/// The command that installs what the manifest names, for messages.
pub const PROVISION: &str = "wasm/provision";

/// Why the manifest is not usable.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("wasm/manifest.toml: {0}")]
    Parse(#[from] toml::de::Error),
    #[error("wasm/manifest.toml: tool `{tool}`: {reason}")]
    Invalid { tool: String, reason: String },
}

/// How a module is entered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// A WASI command: `_start`, and the exit status it gives to `proc_exit`.
    Command,
    /// A reactor: `init` (if any) once, then `run`, whose `i32` result is the exit status.
    Reactor { init: Option<String>, run: String },
}

/// Where a tool's files come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Package {
    /// A wheel from PyPI (`pip download --no-deps NAME==VERSION`).
    Pypi { name: String },
    /// A crate from crates.io built with `cargo install --target TARGET`.
    Crate {
        name: String,
        bin: String,
        features: Option<String>,
        no_default_features: bool,
        target: String,
        /// Extra `rustc` flags for the target (`-C target-feature=+simd128`): they change
        /// the module, so they also name its install directory ([`Source::install_dir`]).
        rustflags: Option<String>,
    },
}

/// A translation of a tool's command line before the module sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgsAdapter {
    /// GNU jq's flags over jaq's ([`super::jq_args`]).
    Jq,
    /// ripgrep's implicit standard input, decided as on a host ([`super::rg_args`]).
    Rg,
}

/// A tool's source package: what `wasm/provision` downloads and checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    pub package: Package,
    pub version: String,
    /// sha256 of the downloaded wheel or `.crate`, lowercase hex.
    pub sha256: String,
}

impl Source {
    /// The package's name (wheel or crate).
    pub fn name(&self) -> &str {
        match &self.package {
            Package::Pypi { name } | Package::Crate { name, .. } => name,
        }
    }

    /// Where the source is installed under a wasm dir, keyed by name, version and sha256,
    /// and for a crate built with extra `rustflags`, the first 8 hex digits of their
    /// sha256 (`ripgrep-15.2.0-a30750b6d074-1b2c3d4e`): a build with other flags lands
    /// beside the old one instead of replacing it, so servers built from an older
    /// manifest keep finding theirs.
    pub fn install_dir(&self, wasm_dir: &Path) -> PathBuf {
        let mut dir = format!("{}-{}-{}", self.name(), self.version, &self.sha256[..12]);
        if let Package::Crate {
            rustflags: Some(flags),
            ..
        } = &self.package
        {
            dir.push('-');
            dir.push_str(&hex(&Sha256::digest(flags.as_bytes()))[..8]);
        }
        wasm_dir.join("pkg").join(dir)
    }
}

/// A file of an installed source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRef {
    /// Relative path inside the install directory (no `..`, no leading `/`).
    pub file: String,
    /// Its sha256, lowercase hex.
    pub sha256: String,
}

/// A read-only file the sessions see at a fixed path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountRef {
    pub file: FileRef,
    /// Absolute path in every session (`/usr/local/lib/python315.zip`).
    pub at: String,
}

/// One tool of the manifest, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tool {
    pub name: String,
    pub aliases: Vec<String>,
    pub summary: String,
    pub kind: ToolKind,
    /// argv[0] the module sees; `None`: the name it was run by.
    pub argv0: Option<String>,
    /// Variables added to the command's environment (the session's own win).
    pub env: Vec<(String, String)>,
    /// Linear-memory limit in bytes; `None`: the server's default.
    pub memory_limit: Option<u64>,
    /// The module imports `host::call`, answered with -1.
    pub host_call_stub: bool,
    /// Arguments put before the command's own (python's prelude that enters the shell's
    /// working directory, which wasi-libc does not learn by itself).
    pub args_prefix: Vec<String>,
    /// The guest enters `$PWD` itself (python's prelude), so its paths are already
    /// resolved against the shell's directory; other guests get the host's cwd-first
    /// resolution ([`crate::wasi::ModuleSpec::cwd_first`]).
    pub enters_pwd: bool,
    /// How the command line is translated for the module ([`ArgsAdapter`]).
    pub args_adapter: Option<ArgsAdapter>,
    /// The utilities a multicall module serves (by argv[0]); empty for a plain tool.
    pub multicall: Vec<String>,
    pub source: Source,
    pub module: FileRef,
    pub mounts: Vec<MountRef>,
}

impl Tool {
    /// Every command name the tool asks for: its name and aliases, or, for a multicall
    /// module, its utilities.
    pub fn names(&self) -> Vec<&str> {
        if self.multicall.is_empty() {
            std::iter::once(self.name.as_str())
                .chain(self.aliases.iter().map(String::as_str))
                .collect()
        } else {
            self.multicall.iter().map(String::as_str).collect()
        }
    }

    /// Every file the tool needs: the module, then its mounts.
    pub fn files(&self) -> Vec<&FileRef> {
        std::iter::once(&self.module)
            .chain(self.mounts.iter().map(|m| &m.file))
            .collect()
    }
}

/// The validated manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    pub tools: Vec<Tool>,
}

/// A tool whose files are all there and match the manifest.
#[derive(Clone, Debug)]
pub struct Provisioned {
    pub tool: Tool,
    /// The module file on this machine.
    pub module: PathBuf,
    /// Each mount: where sessions see it, and the file on this machine.
    pub mounts: Vec<(String, PathBuf)>,
}

/// A tool that cannot run on this server, and why (a message naming `wasm/provision`).
#[derive(Clone, Debug)]
pub struct Unprovisioned {
    pub tool: Tool,
    pub reason: String,
}

/// What a wasm dir holds of the manifest.
#[derive(Clone, Debug, Default)]
pub struct Provisioning {
    pub ready: Vec<Provisioned>,
    pub missing: Vec<Unprovisioned>,
}

impl Manifest {
    /// The manifest the binary embeds.
    pub fn embedded() -> Result<Manifest, ManifestError> {
        Manifest::parse(MANIFEST)
    }

    /// Parses and validates a manifest.
    pub fn parse(text: &str) -> Result<Manifest, ManifestError> {
        let raw: RawManifest = toml::from_str(text)?;
        let mut tools = Vec::new();
        let mut taken = BTreeSet::new();
        let mut points = BTreeSet::new();
        for t in raw.tool {
            let tool = validate(t)?;
            for name in tool.names() {
                if !taken.insert(name.to_string()) {
                    return Err(invalid(
                        &tool.name,
                        format!("the name `{name}` is taken twice"),
                    ));
                }
            }
            for m in &tool.mounts {
                if !points.insert(m.at.clone()) {
                    return Err(invalid(&tool.name, format!("`{}` is mounted twice", m.at)));
                }
            }
            tools.push(tool);
        }
        Ok(Manifest { tools })
    }

    /// Looks for every tool in `wasm_dir` (blocking file I/O: call at start-up or on the
    /// blocking pool).
    pub fn check(&self, wasm_dir: &Path) -> Provisioning {
        let mut out = Provisioning::default();
        for tool in &self.tools {
            match check_tool(tool, wasm_dir) {
                Ok(p) => out.ready.push(p),
                Err(reason) => out.missing.push(Unprovisioned {
                    tool: tool.clone(),
                    reason,
                }),
            }
        }
        out
    }
}

fn check_tool(tool: &Tool, wasm_dir: &Path) -> Result<Provisioned, String> {
    let dir = tool.source.install_dir(wasm_dir);
    let stamp = read_stamp(&dir);
    for f in tool.files() {
        let path = dir.join(&f.file);
        let meta = std::fs::metadata(&path).map_err(|_| {
            format!(
                "{}: not provisioned on this server ({} is missing); run {PROVISION}",
                tool.name, f.file
            )
        })?;
        let stamped = stamp.get(&f.file).is_some_and(|s| {
            s.sha256 == f.sha256
                && s.size == meta.len()
                && Some(s.mtime_ns) == meta.modified().ok().and_then(mtime_ns)
        });
        if stamped {
            continue;
        }
        let got = sha256_file(&path).map_err(|e| {
            format!(
                "{}: cannot read {}: {e}; run {PROVISION}",
                tool.name, f.file
            )
        })?;
        if got != f.sha256 {
            return Err(format!(
                "{}: {} is corrupt (its sha256 is not the manifest's); run {PROVISION}",
                tool.name, f.file
            ));
        }
    }
    Ok(Provisioned {
        tool: tool.clone(),
        module: dir.join(&tool.module.file),
        mounts: tool
            .mounts
            .iter()
            .map(|m| (m.at.clone(), dir.join(&m.file.file)))
            .collect(),
    })
}

struct StampLine {
    sha256: String,
    size: u64,
    mtime_ns: u128,
}

fn read_stamp(dir: &Path) -> BTreeMap<String, StampLine> {
    let Ok(text) = std::fs::read_to_string(dir.join(STAMP)) else {
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(4, ' ');
            let sha256 = parts.next()?.to_string();
            let size = parts.next()?.parse().ok()?;
            let mtime_ns = parts.next()?.parse().ok()?;
            let file = parts.next()?.to_string();
            Some((
                file,
                StampLine {
                    sha256,
                    size,
                    mtime_ns,
                },
            ))
        })
        .collect()
}

fn mtime_ns(t: std::time::SystemTime) -> Option<u128> {
    t.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_nanos())
}

/// The sha256 of a file, lowercase hex, read in chunks.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    #[serde(default)]
    tool: Vec<RawTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    summary: String,
    kind: String,
    init: Option<String>,
    run: Option<String>,
    argv0: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    memory_limit: Option<String>,
    #[serde(default)]
    host_call_stub: bool,
    #[serde(default)]
    args_prefix: Vec<String>,
    #[serde(default)]
    enters_pwd: bool,
    args_adapter: Option<String>,
    #[serde(default)]
    multicall: Vec<String>,
    source: RawSource,
    module: RawFile,
    #[serde(default)]
    mounts: Vec<RawMount>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    pypi: Option<String>,
    #[serde(rename = "crate")]
    krate: Option<String>,
    version: String,
    sha256: String,
    bin: Option<String>,
    features: Option<String>,
    #[serde(default)]
    no_default_features: bool,
    target: Option<String>,
    rustflags: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    file: String,
    sha256: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMount {
    file: String,
    sha256: String,
    at: String,
}

fn invalid(tool: &str, reason: impl Into<String>) -> ManifestError {
    ManifestError::Invalid {
        tool: tool.to_string(),
        reason: reason.into(),
    }
}

/// A command name: what a shell word and a `/usr/bin/NAME` can both be.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'))
}

fn valid_sha256(s: &str) -> bool {
    s.len() == 64 && s.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
}

/// A path inside an install directory: relative, no `.`/`..` components.
fn valid_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

/// `512M`, `1G`, `1048576`: bytes, with an optional power-of-1024 suffix.
fn parse_size(s: &str) -> Option<u64> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let mult: u64 = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult).filter(|&b| b > 0)
}

fn validate(t: RawTool) -> Result<Tool, ManifestError> {
    let name = t.name;
    let bad = |reason: String| invalid(&name, reason);
    if !valid_name(&name) {
        return Err(bad("the name is not a command name".into()));
    }
    for n in t.aliases.iter().chain(&t.multicall) {
        if !valid_name(n) {
            return Err(bad(format!("`{n}` is not a command name")));
        }
    }
    if !t.multicall.is_empty() && !t.aliases.is_empty() {
        return Err(bad("a multicall tool has no aliases".into()));
    }
    let kind = match (t.kind.as_str(), t.run) {
        ("command", None) if t.init.is_none() => ToolKind::Command,
        ("command", _) => return Err(bad("a command has no `init` or `run`".into())),
        ("reactor", Some(run)) => ToolKind::Reactor { init: t.init, run },
        ("reactor", None) => return Err(bad("a reactor needs `run`".into())),
        (other, _) => {
            return Err(bad(format!(
                "kind is `{other}`, not `command` or `reactor`"
            )));
        }
    };
    let args_adapter = match t.args_adapter.as_deref() {
        None => None,
        Some("jq") => Some(ArgsAdapter::Jq),
        Some("rg") => Some(ArgsAdapter::Rg),
        Some(other) => {
            return Err(bad(format!("args_adapter `{other}` is not `jq` or `rg`")));
        }
    };
    let memory_limit = match &t.memory_limit {
        None => None,
        Some(s) => {
            Some(parse_size(s).ok_or_else(|| bad(format!("memory_limit `{s}` is not a size")))?)
        }
    };
    let s = t.source;
    if !valid_sha256(&s.sha256) {
        return Err(bad("source.sha256 is not 64 lowercase hex digits".into()));
    }
    if s.version.is_empty() || s.version.contains(['/', ' ']) {
        return Err(bad("source.version is not a version".into()));
    }
    let package = match (s.pypi, s.krate) {
        (Some(pypi), None) => {
            if s.bin.is_some()
                || s.features.is_some()
                || s.no_default_features
                || s.target.is_some()
                || s.rustflags.is_some()
            {
                return Err(bad(
                    "a wheel source has no bin, features, target or rustflags".into(),
                ));
            }
            Package::Pypi { name: pypi }
        }
        (None, Some(krate)) => Package::Crate {
            name: krate,
            bin: s
                .bin
                .ok_or_else(|| bad("a crate source needs `bin`".into()))?,
            features: s.features,
            no_default_features: s.no_default_features,
            target: s.target.unwrap_or_else(|| "wasm32-wasip1".into()),
            rustflags: match s.rustflags {
                Some(f) if f.trim().is_empty() || f.contains(['\n', '\'', '"']) => {
                    return Err(bad(format!("rustflags `{f}` are not flags")));
                }
                f => f,
            },
        },
        _ => return Err(bad("source names exactly one of `pypi` and `crate`".into())),
    };
    if !valid_name(match &package {
        Package::Pypi { name } | Package::Crate { name, .. } => name,
    }) {
        return Err(bad("the source package is not a package name".into()));
    }
    let file = |f: String, sha256: String, what: &str| -> Result<FileRef, ManifestError> {
        if !valid_relative(&f) {
            return Err(bad(format!("{what} `{f}` is not a relative path")));
        }
        if !valid_sha256(&sha256) {
            return Err(bad(format!(
                "the sha256 of {what} `{f}` is not 64 lowercase hex digits (run {PROVISION}, which prints it)"
            )));
        }
        Ok(FileRef { file: f, sha256 })
    };
    let module = file(t.module.file, t.module.sha256, "module")?;
    let mut mounts = Vec::new();
    for m in t.mounts {
        let at = m.at;
        let clean = at.starts_with('/')
            && at.len() > 1
            && !at.ends_with('/')
            && at[1..]
                .split('/')
                .all(|c| !c.is_empty() && c != "." && c != "..")
            && at != "/dev"
            && !at.starts_with("/dev/")
            && at != "/tmp"
            && !at.starts_with("/tmp/");
        if !clean {
            return Err(bad(format!(
                "mount point `{at}` is not an absolute path outside /dev and /tmp"
            )));
        }
        mounts.push(MountRef {
            file: file(m.file, m.sha256, "mount")?,
            at,
        });
    }
    Ok(Tool {
        name,
        aliases: t.aliases,
        summary: t.summary,
        kind,
        argv0: t.argv0,
        env: t.env.into_iter().collect(),
        memory_limit,
        host_call_stub: t.host_call_stub,
        args_prefix: t.args_prefix,
        enters_pwd: t.enters_pwd,
        args_adapter,
        multicall: t.multicall,
        source: Source {
            package,
            version: s.version,
            sha256: s.sha256,
        },
        module,
        mounts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "879bdb628a1a799dc3a6d1a645fee0f88944bf4cdf5e1628e0e1d2b4b33d28d3";

    fn tool(extra: &str) -> String {
        format!(
            r#"[[tool]]
name = "t"
summary = "a tool"
kind = "command"
source = {{ pypi = "pkg", version = "1.0", sha256 = "{SHA}" }}
module = {{ file = "bin/t.wasm", sha256 = "{SHA}" }}
{extra}
"#
        )
    }

    #[test]
    fn the_embedded_manifest_is_valid() {
        let m = Manifest::embedded().unwrap();
        let python = m.tools.iter().find(|t| t.name == "python3").unwrap();
        assert_eq!(python.aliases, ["python"]);
        assert_eq!(
            python.kind,
            ToolKind::Reactor {
                init: None,
                run: "run".into()
            }
        );
        assert_eq!(python.mounts[0].at, "/usr/local/lib/python315.zip");
        assert_eq!(python.memory_limit, Some(1 << 30));
        for t in &m.tools {
            assert!(
                t.files().iter().all(|f| valid_sha256(&f.sha256)),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn bad_manifests_name_the_tool_and_the_fault() {
        let cases = [
            (
                tool("").replace("kind = \"command\"", "kind = \"lib\""),
                "not `command`",
            ),
            (
                tool("").replace("bin/t.wasm", "../t.wasm"),
                "not a relative path",
            ),
            (
                tool("").replace("name = \"t\"", "name = \"a b\""),
                "not a command name",
            ),
            (tool("memory_limit = \"lots\""), "not a size"),
            (
                tool(&format!(
                    "mounts = [{{ file = \"z\", sha256 = \"{SHA}\", at = \"/dev/z\" }}]"
                )),
                "outside /dev",
            ),
            (tool("") + &tool(""), "taken twice"),
            (
                tool("").replace("kind = \"command\"", "kind = \"reactor\""),
                "needs `run`",
            ),
            (
                tool("").replace("pypi = \"pkg\"", "crate = \"pkg\""),
                "needs `bin`",
            ),
            (
                tool("").replace(
                    &format!("file = \"bin/t.wasm\", sha256 = \"{SHA}\""),
                    "file = \"bin/t.wasm\", sha256 = \"\"",
                ),
                "run wasm/provision",
            ),
            (tool("colour = 1"), "unknown field"),
        ];
        for (text, want) in cases {
            let err = Manifest::parse(&text).unwrap_err().to_string();
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
    }

    #[test]
    fn rustflags_name_their_own_install_directory() {
        let crate_tool = |extra: &str| {
            tool("").replace(
                "pypi = \"pkg\"",
                &format!("crate = \"pkg\", bin = \"t\"{extra}"),
            )
        };
        let plain = Manifest::parse(&crate_tool("")).unwrap();
        let simd =
            Manifest::parse(&crate_tool(", rustflags = \"-C target-feature=+simd128\"")).unwrap();
        let root = Path::new("/w");
        let plain_dir = plain.tools[0].source.install_dir(root);
        let simd_dir = simd.tools[0].source.install_dir(root);
        assert_eq!(
            plain_dir,
            Path::new(&format!("/w/pkg/pkg-1.0-{}", &SHA[..12]))
        );
        // The flags' digest, as wasm/provision computes it.
        let digest = &hex(&Sha256::digest(b"-C target-feature=+simd128"))[..8];
        assert_eq!(
            simd_dir,
            Path::new(&format!("/w/pkg/pkg-1.0-{}-{digest}", &SHA[..12]))
        );
        for bad in [", rustflags = \" \"", ", rustflags = \"-C a='b'\""] {
            let err = Manifest::parse(&crate_tool(bad)).unwrap_err().to_string();
            assert!(err.contains("are not flags"), "{err}");
        }
        let err = Manifest::parse(
            &tool("").replace("pypi = \"pkg\"", "pypi = \"pkg\", rustflags = \"-O\""),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("no bin, features, target or rustflags"),
            "{err}"
        );
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("0"), None);
        assert_eq!(parse_size("1T"), None);
        assert_eq!(parse_size("99999999999G"), None);
    }

    #[test]
    fn check_finds_verifies_and_names_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let content = b"\0asm\x01\0\0\0";
        let sha = hex(&Sha256::digest(content));
        let text = tool("").replace(
            &format!("\"bin/t.wasm\", sha256 = \"{SHA}\""),
            &format!("\"bin/t.wasm\", sha256 = \"{sha}\""),
        );
        let m = Manifest::parse(&text).unwrap();
        let t = &m.tools[0];
        let p = m.check(dir.path());
        assert!(p.ready.is_empty());
        assert!(
            p.missing[0].reason.contains("run wasm/provision"),
            "{}",
            p.missing[0].reason
        );
        assert!(p.missing[0].reason.contains("not provisioned"));

        let install = t.source.install_dir(dir.path());
        assert!(install.ends_with(format!("pkg/pkg-1.0-{}", &SHA[..12])));
        std::fs::create_dir_all(install.join("bin")).unwrap();
        std::fs::write(install.join("bin/t.wasm"), content).unwrap();
        let p = m.check(dir.path());
        assert_eq!(p.ready.len(), 1, "{:?}", p.missing);
        assert_eq!(p.ready[0].module, install.join("bin/t.wasm"));

        std::fs::write(install.join("bin/t.wasm"), b"\0asm\x01\0\0\x01").unwrap();
        let p = m.check(dir.path());
        assert!(
            p.missing[0].reason.contains("corrupt"),
            "{}",
            p.missing[0].reason
        );

        // A stamp that does not match the file as it is now is not trusted.
        let meta = std::fs::metadata(install.join("bin/t.wasm")).unwrap();
        let ns = mtime_ns(meta.modified().unwrap()).unwrap();
        std::fs::write(
            install.join(STAMP),
            format!("{sha} {} {} bin/t.wasm\n", meta.len() + 1, ns),
        )
        .unwrap();
        assert!(m.check(dir.path()).ready.is_empty());
        // One that does is (the provisioning script hashed the file).
        std::fs::write(
            install.join(STAMP),
            format!("{sha} {} {} bin/t.wasm\n", meta.len(), ns),
        )
        .unwrap();
        assert_eq!(m.check(dir.path()).ready.len(), 1);
    }
}
