//! Searching with a pattern in linear time: the pattern compiled once to automata.
//!
//! `${x#pat}`, `${x%%pat}` and `${x//pat/rep}` ask for the shortest or longest match at
//! one end of a string, or for the leftmost-longest matches in it. Trying every start and
//! end with a backtracking matcher costs cubic time (`${x//a*z/b}` on 4,000 characters took
//! seconds with no point to interrupt it). Here a pattern becomes three automata, compiled
//! once per pattern text and cached:
//!
//! - a forward lazy DFA reporting every match (`MatchKind::All`), run anchored at a start:
//!   stopping at the first match gives the shortest prefix, running until the automaton
//!   dies gives the longest;
//! - the same in reverse, run anchored at the end, for suffixes;
//! - a regex whose leftmost match gives the leftmost position where any match starts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use regex_automata::hybrid::dfa::DFA;
use regex_automata::nfa::thompson;
use regex_automata::{Anchored, Input, MatchKind};

/// Compiled patterns kept for reuse (a loop applies the same few patterns again and
/// again); past this many the cache starts over.
const CACHE_ENTRIES: usize = 128;

/// The automata of one pattern.
pub(super) struct Automata {
    forward: DFA,
    reverse: DFA,
    leftmost: regex::Regex,
}

static CACHE: Mutex<Option<HashMap<String, Arc<Automata>>>> = Mutex::new(None);

/// The automata for the regular expression `re` (a translated pattern), from the cache or
/// compiled now; `None` if it cannot be compiled (the caller falls back to backtracking).
pub(super) fn automata(re: &str) -> Option<Arc<Automata>> {
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let map = cache.get_or_insert_with(HashMap::new);
    if let Some(a) = map.get(re) {
        return Some(a.clone());
    }
    let built = Arc::new(build(re)?);
    if map.len() >= CACHE_ENTRIES {
        map.clear();
    }
    map.insert(re.to_string(), built.clone());
    Some(built)
}

fn build(re: &str) -> Option<Automata> {
    let all = DFA::config().match_kind(MatchKind::All);
    let forward = DFA::builder().configure(all.clone()).build(re).ok()?;
    let reverse = DFA::builder()
        .configure(all)
        .thompson(thompson::Config::new().reverse(true))
        .build(re)
        .ok()?;
    let leftmost = regex::Regex::new(re).ok()?;
    Some(Automata {
        forward,
        reverse,
        leftmost,
    })
}

impl Automata {
    /// Byte length of the shortest or longest match of the pattern at the start of `hay`.
    pub(super) fn prefix(&self, hay: &str, longest: bool) -> Option<usize> {
        self.prefix_from(hay, 0, longest)
    }

    /// End (byte offset) of the shortest or longest match starting at `start`.
    fn prefix_from(&self, hay: &str, start: usize, longest: bool) -> Option<usize> {
        let mut cache = self.forward.create_cache();
        let input = Input::new(hay)
            .range(start..)
            .anchored(Anchored::Yes)
            .earliest(!longest);
        let m = self.forward.try_search_fwd(&mut cache, &input).ok()??;
        Some(m.offset())
    }

    /// Start (byte offset) of the shortest or longest match that ends at the end of `hay`.
    pub(super) fn suffix(&self, hay: &str, longest: bool) -> Option<usize> {
        let mut cache = self.reverse.create_cache();
        let input = Input::new(hay).anchored(Anchored::Yes).earliest(!longest);
        let m = self.reverse.try_search_rev(&mut cache, &input).ok()??;
        Some(m.offset())
    }

    /// The leftmost match at or after byte `from`, longest at its start: (start, end).
    pub(super) fn find(&self, hay: &str, from: usize) -> Option<(usize, usize)> {
        let start = self.leftmost.find_at(hay, from)?.start();
        let end = self.prefix_from(hay, start, true)?;
        Some((start, end))
    }
}
