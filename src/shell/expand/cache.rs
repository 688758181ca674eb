//! Parsed words by their text, so a loop body does not parse the same words on every
//! iteration: brush-parser's word parser costs more than the rest of expanding a short
//! word (`$((x+i))`, `$line`, `"$@"`).
//!
//! A word's pieces depend only on its text and on how it is parsed (as a word or as a
//! here-document body), never on the shell's state, so a cached parse is always the
//! parse. Only successful parses are kept: an error is worded afresh each time.

use std::sync::{Arc, Mutex};

use brush_parser::word::WordPieceWithSource;

use super::super::FastMap;

/// Longest text kept: words in loops are short, and the bound keeps the cache's memory
/// independent of the script's size.
const MAX_CACHED_TEXT: usize = 256;

/// Most texts kept per [`Mode`]; a full map starts over. With [`MAX_CACHED_TEXT`] this
/// bounds the cache to 128 KiB of text (and the pieces parsed from it) per session.
const MAX_CACHED_WORDS: usize = 256;

/// How a text is parsed.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A shell word (quotes, escapes, expansions).
    Word,
    /// A here-document body or arithmetic text: quotes are literal.
    Heredoc,
}

type Pieces = Arc<Vec<WordPieceWithSource>>;

/// The cache, shared by a shell and its subshells (the parse of a text is the same in
/// all of them).
#[derive(Clone, Default)]
pub(crate) struct WordCache(Arc<Mutex<Maps>>);

/// One map per [`Mode`], so a lookup takes the text as a `&str`, without allocating.
#[derive(Default)]
struct Maps {
    words: FastMap<String, Pieces>,
    heredocs: FastMap<String, Pieces>,
}

impl Maps {
    fn map(&mut self, mode: Mode) -> &mut FastMap<String, Pieces> {
        match mode {
            Mode::Word => &mut self.words,
            Mode::Heredoc => &mut self.heredocs,
        }
    }
}

impl std::fmt::Debug for WordCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WordCache")
    }
}

impl WordCache {
    /// The pieces of `text` parsed as `mode`, from the cache or by `parse` (whose result is
    /// then kept).
    pub(crate) fn get_or_parse<E>(
        &self,
        mode: Mode,
        text: &str,
        parse: impl FnOnce(&str) -> Result<Vec<WordPieceWithSource>, E>,
    ) -> Result<Pieces, E> {
        if text.len() > MAX_CACHED_TEXT {
            return parse(text).map(Arc::new);
        }
        if let Some(p) = self
            .0
            .lock()
            .ok()
            .and_then(|mut m| m.map(mode).get(text).cloned())
        {
            return Ok(p);
        }
        // Parsed without holding the lock (a long parse must not hold up another task).
        let pieces = Arc::new(parse(text)?);
        if let Ok(mut maps) = self.0.lock() {
            let map = maps.map(mode);
            if map.len() >= MAX_CACHED_WORDS {
                map.clear();
            }
            map.insert(text.to_string(), Arc::clone(&pieces));
        }
        Ok(pieces)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<WordPieceWithSource>, ()> {
        brush_parser::word::parse(text, &brush_parser::ParserOptions::default()).map_err(|_| ())
    }

    #[test]
    fn a_text_is_parsed_once_per_mode() {
        let cache = WordCache::default();
        let mut calls = 0;
        let mut first: Option<Pieces> = None;
        for _ in 0..3 {
            let p = cache.get_or_parse(Mode::Word, "$x-y", |t| {
                calls += 1;
                parse(t)
            });
            let Ok(p) = p else {
                panic!("`$x-y` did not parse");
            };
            assert!(first.as_ref().is_none_or(|f| Arc::ptr_eq(f, &p)));
            first.get_or_insert(p);
        }
        assert_eq!(calls, 1);
        let _ = cache.get_or_parse(Mode::Heredoc, "$x-y", |t| {
            calls += 1;
            parse(t)
        });
        assert_eq!(calls, 2, "a here-document parse is not a word parse");
    }

    #[test]
    fn failures_and_long_texts_are_not_kept() {
        let cache = WordCache::default();
        let mut calls = 0;
        for _ in 0..2 {
            let r: Result<Pieces, ()> = cache.get_or_parse(Mode::Word, "bad", |_| {
                calls += 1;
                Err(())
            });
            assert!(r.is_err());
        }
        let long = "a".repeat(MAX_CACHED_TEXT + 1);
        for _ in 0..2 {
            let _ = cache.get_or_parse(Mode::Word, &long, |t| {
                calls += 1;
                parse(t)
            });
        }
        assert_eq!(calls, 4);
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = WordCache::default();
        for i in 0..MAX_CACHED_WORDS * 3 {
            let _ = cache.get_or_parse(Mode::Word, &format!("w{i}"), parse);
        }
        let len = cache.0.lock().map(|m| m.words.len()).unwrap_or(usize::MAX);
        assert!((1..=MAX_CACHED_WORDS).contains(&len), "{len} words kept");
    }

    #[test]
    fn subshell_copies_share_it() {
        let cache = WordCache::default();
        let copy = cache.clone();
        let _ = cache.get_or_parse(Mode::Word, "$a", parse);
        let mut calls = 0;
        let _ = copy.get_or_parse(Mode::Word, "$a", |t| {
            calls += 1;
            parse(t)
        });
        assert_eq!(calls, 0);
    }
}
