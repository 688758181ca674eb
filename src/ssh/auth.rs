//! Who may log in: the auth modes, the authorized_keys file (looked at on every attempt,
//! re-read when it changed), and the time every answer to an attempt takes.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use russh::keys::ssh_key::{AuthorizedKeys, PublicKey};
use russh::server::Auth;
use russh::{MethodKind, MethodSet};
use tokio::time::Instant;

use super::KeyError;
use crate::config::AuthMode;

/// How long an answer to an authentication attempt takes at least, from the attempt's
/// start, by default (`--auth-min-time-ms`): well past the few microseconds the decision
/// takes whichever way it goes (a key looked up or not, the authorized_keys file
/// re-read or not), and small beside a login's round trips.
pub const DEFAULT_AUTH_MIN_TIME: Duration = Duration::from_millis(3);

/// Who may log in, and how long each answer takes.
#[derive(Clone, Debug)]
pub struct AuthPolicy {
    pub mode: AuthMode,
    /// The authorized_keys file (`keys` mode only).
    keys: Option<Arc<KeysFile>>,
    /// Under `--auth keys`, every answer to an attempt (accept or reject, any method) is
    /// sent this long after the attempt started, not before (see [`Self::answer_time`]).
    pub min_time: Duration,
}

impl AuthPolicy {
    pub fn anonymous() -> AuthPolicy {
        AuthPolicy {
            mode: AuthMode::Anonymous,
            keys: None,
            min_time: DEFAULT_AUTH_MIN_TIME,
        }
    }

    /// Reads an OpenSSH authorized_keys file, which must hold at least one key now; later
    /// changes to it are picked up at the next login (see [`AuthPolicy::allows_key`]).
    pub fn from_authorized_keys(path: &Path) -> Result<AuthPolicy, KeyError> {
        let shown = path.display().to_string();
        let failed = |reason: String| KeyError::AuthorizedKeys {
            path: shown.clone(),
            reason,
        };
        let meta = std::fs::metadata(path).map_err(|e| failed(e.to_string()))?;
        let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
        let keys = parse_keys(&text).map_err(failed)?;
        if keys.is_empty() {
            return Err(failed("no keys in the file".into()));
        }
        Ok(AuthPolicy {
            mode: AuthMode::Keys,
            keys: Some(Arc::new(KeysFile {
                path: path.to_path_buf(),
                state: tokio::sync::Mutex::new(Loaded {
                    seen: Some(Stamp::of(&meta)),
                    keys: Arc::new(keys),
                }),
            })),
            min_time: DEFAULT_AUTH_MIN_TIME,
        })
    }

    pub fn with_min_time(mut self, min_time: Duration) -> AuthPolicy {
        self.min_time = min_time;
        self
    }

    /// How long each answer actually waits: `min_time` under `--auth keys`; nothing on an
    /// anonymous server, where every attempt is accepted and its timing hides nothing.
    pub fn answer_time(&self) -> Duration {
        match self.mode {
            AuthMode::Anonymous => Duration::ZERO,
            AuthMode::Keys => self.min_time,
        }
    }

    /// The methods offered to clients.
    pub fn methods(&self) -> MethodSet {
        match self.mode {
            AuthMode::Anonymous => MethodSet::from(
                &[
                    MethodKind::None,
                    MethodKind::Password,
                    MethodKind::KeyboardInteractive,
                    MethodKind::PublicKey,
                ][..],
            ),
            AuthMode::Keys => MethodSet::from(&[MethodKind::PublicKey][..]),
        }
    }

    /// Whether `key` may log in: any key in `anonymous` mode; in `keys` mode, one in the
    /// authorized_keys file as it is now (re-read if it changed since last looked at).
    pub async fn allows_key(&self, key: &PublicKey) -> bool {
        match (&self.mode, &self.keys) {
            (AuthMode::Anonymous, _) => true,
            (AuthMode::Keys, None) => false,
            (AuthMode::Keys, Some(file)) => file
                .current()
                .await
                .iter()
                .any(|k| k.key_data() == key.key_data()),
        }
    }
}

/// The keys of an OpenSSH authorized_keys text (options and comments ignored), or why a
/// line is not one.
fn parse_keys(text: &str) -> Result<Vec<PublicKey>, String> {
    let mut keys = Vec::new();
    for entry in AuthorizedKeys::new(text) {
        keys.push(entry.map_err(|e| e.to_string())?.public_key().clone());
    }
    Ok(keys)
}

/// An authorized_keys file and the keys last read from it.
#[derive(Debug)]
struct KeysFile {
    path: PathBuf,
    /// Held across a re-read, so logins at the same moment wait for one re-read.
    state: tokio::sync::Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    /// The file as last looked at, good or not (`None`: it could not be looked at): it is
    /// read again only when this changes, so a bad version is warned about once.
    seen: Option<Stamp>,
    /// The last good set of keys.
    keys: Arc<Vec<PublicKey>>,
}

/// How old a version of the file must be before its stamp is trusted to name it.
const SETTLE: Duration = Duration::from_secs(2);

/// What tells one version of the file from another without reading it: any write,
/// rename over it or replacement changes one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<SystemTime>,
    changed: (i64, i64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

impl KeysFile {
    /// The keys to check against now. A file that changed is read again; if it cannot
    /// be read or a line of it is not a key, the last good set stays (with a warning, once
    /// per version of the file); a good file without keys lets nobody in.
    async fn current(&self) -> Arc<Vec<PublicKey>> {
        let mut state = self.state.lock().await;
        let path = self.path.display().to_string();
        let meta = match tokio::fs::metadata(&self.path).await {
            Ok(meta) => meta,
            Err(e) => {
                if state.seen.take().is_some() {
                    tracing::warn!(
                        path, error = %e, kept = state.keys.len(),
                        "authorized keys file cannot be looked at; keeping the last good keys"
                    );
                }
                return state.keys.clone();
            }
        };
        let stamp = Stamp::of(&meta);
        if state.seen == Some(stamp) {
            return state.keys.clone();
        }
        // A file changed in the last moments may change again within the same tick of
        // the file system's clock, leaving the same stamp: it is read again next time.
        let settled = stamp
            .modified
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age > SETTLE);
        state.seen = settled.then_some(stamp);
        let read = tokio::fs::read_to_string(&self.path)
            .await
            .map_err(|e| e.to_string())
            .and_then(|text| parse_keys(&text));
        match read {
            Ok(keys) => {
                if keys.is_empty() {
                    tracing::warn!(
                        path,
                        "authorized keys file re-read: no keys, nobody may log in"
                    );
                } else {
                    tracing::info!(path, keys = keys.len(), "authorized keys file re-read");
                }
                state.keys = Arc::new(keys);
            }
            Err(reason) => tracing::warn!(
                path, %reason, kept = state.keys.len(),
                "authorized keys file changed but cannot be used; keeping the last good keys"
            ),
        }
        state.keys.clone()
    }
}

/// Paces the answers of one connection's authentication attempts: each is sent
/// `min_time` after its attempt started, whatever it is, so how long an answer takes does
/// not tell which users or keys exist.
///
/// A public-key request that russh first offers to the handler (is this key allowed?)
/// and then, once the signature checks out, hands over again is one attempt: its start
/// stays open between the two.
#[derive(Debug)]
pub struct Pace {
    min_time: Duration,
    open: Option<Instant>,
}

impl Pace {
    pub fn new(min_time: Duration) -> Pace {
        Pace {
            min_time,
            open: None,
        }
    }

    /// Starts an attempt, or goes on with the one an accepted key offer began.
    pub fn begin(&mut self) -> Instant {
        *self.open.get_or_insert_with(Instant::now)
    }

    /// Gives `answer` once the attempt that began at `started` is `min_time` old;
    /// `goes_on`: the same request continues (a key offer accepted, its signature next).
    pub async fn answer(&mut self, started: Instant, answer: Auth, goes_on: bool) -> Auth {
        if !goes_on {
            self.open = None;
        }
        let deadline = self.deadline(started);
        if deadline > Instant::now() {
            tokio::time::sleep_until(deadline).await;
        }
        answer
    }

    /// When the answer to the attempt that began at `started` goes out.
    pub fn deadline(&self, started: Instant) -> Instant {
        started + self.min_time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_millis(3);

    /// Whether it is now the deadline `at`: not before, and within tokio's timer
    /// resolution (whole milliseconds, rounded up) after.
    fn at(at: Instant) -> bool {
        let now = Instant::now();
        now >= at && now < at + Duration::from_millis(2)
    }

    #[tokio::test(start_paused = true)]
    async fn a_reject_and_an_accept_are_both_answered_at_the_same_deadline() {
        for accept in [false, true] {
            let answer = || if accept { Auth::Accept } else { Auth::reject() };
            let mut pace = Pace::new(MIN);
            let t0 = Instant::now();
            let started = pace.begin();
            assert_eq!(pace.deadline(started), t0 + MIN);
            // However long deciding took, as long as it is under the floor.
            tokio::time::advance(Duration::from_micros(if accept { 700 } else { 5 })).await;
            let got = pace.answer(started, answer(), false).await;
            assert_eq!(got, answer());
            assert!(at(t0 + MIN), "accept: {accept}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn no_floor_answers_at_once() {
        let mut pace = Pace::new(Duration::ZERO);
        let t0 = Instant::now();
        let started = pace.begin();
        assert_eq!(
            pace.answer(started, Auth::reject(), false).await,
            Auth::reject()
        );
        assert_eq!(Instant::now(), t0);
        assert_eq!(AuthPolicy::anonymous().answer_time(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn an_offered_key_and_its_signed_request_are_one_attempt() {
        let mut pace = Pace::new(MIN);
        let t0 = Instant::now();
        let started = pace.begin();
        pace.answer(started, Auth::Accept, true).await;
        assert!(at(t0 + MIN));
        let offered = Instant::now();
        // The signature check, then the final answer: no second floor.
        tokio::time::advance(Duration::from_micros(50)).await;
        assert_eq!(pace.begin(), started);
        pace.answer(started, Auth::Accept, false).await;
        assert_eq!(Instant::now(), offered + Duration::from_micros(50));
        // The next attempt starts afresh.
        let next = pace.begin();
        assert_eq!(next, Instant::now());
        pace.answer(next, Auth::reject(), false).await;
        assert!(at(next + MIN));
    }

    fn key(seed: u8) -> (PublicKey, String) {
        let pair = russh::keys::ssh_key::private::Ed25519Keypair::from_seed(&[seed; 32]);
        let private = russh::keys::PrivateKey::from(pair);
        let public = private.public_key().clone();
        let line = public.to_openssh().unwrap();
        (public, line)
    }

    #[tokio::test]
    async fn the_keys_file_is_re_read_when_it_changes_and_a_bad_one_keeps_the_last_good_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("authorized_keys");
        let (a, a_line) = key(1);
        let (b, b_line) = key(2);
        std::fs::write(&path, format!("{a_line}\n")).unwrap();
        let policy = AuthPolicy::from_authorized_keys(&path).unwrap();
        assert!(policy.allows_key(&a).await);
        assert!(!policy.allows_key(&b).await);

        // Replaced (a new inode), then edited in place.
        let tmp = dir.path().join("new");
        std::fs::write(&tmp, format!("{a_line}\n{b_line} bob@host\n")).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert!(policy.allows_key(&b).await);
        std::fs::write(&path, format!("# only bob now\n{b_line}\n")).unwrap();
        assert!(!policy.allows_key(&a).await);
        assert!(policy.allows_key(&b).await);

        // Malformed, then gone: bob stays allowed, alice refused.
        std::fs::write(&path, "ssh-ed25519 not-base64!!\n").unwrap();
        assert!(policy.allows_key(&b).await);
        assert!(!policy.allows_key(&a).await);
        std::fs::remove_file(&path).unwrap();
        assert!(policy.allows_key(&b).await);

        // Back, with alice only; then empty: nobody.
        std::fs::write(&path, format!("{a_line}\n")).unwrap();
        assert!(policy.allows_key(&a).await);
        assert!(!policy.allows_key(&b).await);
        std::fs::write(&path, "").unwrap();
        assert!(!policy.allows_key(&a).await);
    }
}
