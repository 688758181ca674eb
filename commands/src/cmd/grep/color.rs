//! `--color`'s palette: GNU's default colors and its reading of `GREP_COLORS` (and the
//! deprecated `GREP_COLOR`), and how a color starts and ends.

/// The colors of `--color`: GNU's defaults, changed by `GREP_COLORS` (and the
/// deprecated `GREP_COLOR`). An empty color is no color at all.
#[derive(Clone, Debug)]
pub(super) struct Palette {
    /// Matches in selected lines (`ms`) and in context lines (`mc`).
    pub(super) ms: String,
    pub(super) mc: String,
    /// The rest of selected lines (`sl`) and of context lines (`cx`).
    pub(super) sl: String,
    pub(super) cx: String,
    /// File names, line numbers, byte offsets, separators.
    pub(super) fname: String,
    pub(super) ln: String,
    pub(super) bn: String,
    pub(super) se: String,
    /// `rv`: with -v, `sl` and `cx` trade places.
    pub(super) rv: bool,
    /// `ne`: no erase-to-end-of-line (`\x1b[K`) after each color.
    pub(super) ne: bool,
}

impl Default for Palette {
    fn default() -> Palette {
        Palette {
            ms: "01;31".into(),
            mc: "01;31".into(),
            sl: String::new(),
            cx: String::new(),
            fname: "35".into(),
            ln: "32".into(),
            bn: "32".into(),
            se: "36".into(),
            rv: false,
            ne: false,
        }
    }
}

impl Palette {
    /// GNU's reading of the environment; gives the deprecation warning `GREP_COLOR`
    /// calls for when it is what colors matches.
    pub(super) fn from_env(
        env: &std::collections::BTreeMap<String, String>,
    ) -> (Palette, Option<String>) {
        let mut p = Palette::default();
        let is_sgr = |v: &str| v.bytes().all(|b| b == b';' || b.is_ascii_digit());
        let legacy = env
            .get("GREP_COLOR")
            .filter(|v| !v.is_empty() && is_sgr(v))
            .cloned();
        let (mut ms_legacy, mut mc_legacy) = (false, false);
        if let Some(v) = &legacy {
            p.ms.clone_from(v);
            p.mc.clone_from(v);
            (ms_legacy, mc_legacy) = (true, true);
        }
        if let Some(spec) = env.get("GREP_COLORS").filter(|v| !v.is_empty()) {
            for cap in spec.split(':') {
                let (name, val) = match cap.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (cap, None),
                };
                // An ill-formed value ends the reading, as in GNU.
                if val.is_some_and(|v| !is_sgr(v)) {
                    break;
                }
                let slot = match name {
                    "mt" => {
                        if let Some(v) = val {
                            p.ms = v.to_string();
                            p.mc = v.to_string();
                            (ms_legacy, mc_legacy) = (false, false);
                        }
                        continue;
                    }
                    "ms" => {
                        ms_legacy = false;
                        &mut p.ms
                    }
                    "mc" => {
                        mc_legacy = false;
                        &mut p.mc
                    }
                    "sl" => &mut p.sl,
                    "cx" => &mut p.cx,
                    "fn" => &mut p.fname,
                    "ln" => &mut p.ln,
                    "bn" => &mut p.bn,
                    "se" => &mut p.se,
                    "rv" => {
                        p.rv = true;
                        continue;
                    }
                    "ne" => {
                        p.ne = true;
                        continue;
                    }
                    _ => continue,
                };
                if let Some(v) = val {
                    *slot = v.to_string();
                }
            }
        }
        let warning = legacy
            .filter(|_| ms_legacy || mc_legacy)
            .map(|v| format!("warning: GREP_COLOR='{v}' is deprecated; use GREP_COLORS='mt={v}'"));
        (p, warning)
    }

    /// Starts `color` (nothing for an empty one).
    pub(super) fn start(&self, buf: &mut Vec<u8>, color: &str) {
        if color.is_empty() {
            return;
        }
        buf.extend_from_slice(b"\x1b[");
        buf.extend_from_slice(color.as_bytes());
        buf.push(b'm');
        if !self.ne {
            buf.extend_from_slice(b"\x1b[K");
        }
    }

    /// Ends `color` (nothing for an empty one).
    pub(super) fn end(&self, buf: &mut Vec<u8>, color: &str) {
        if color.is_empty() {
            return;
        }
        buf.extend_from_slice(b"\x1b[m");
        if !self.ne {
            buf.extend_from_slice(b"\x1b[K");
        }
    }
}
