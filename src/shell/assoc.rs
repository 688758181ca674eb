//! Associative arrays (`declare -A`) that iterate in bash 5.2's order.
//!
//! Scripts print `${!a[@]}` and `declare -p a` unsorted, so the order is observable: bash
//! keeps an associative array in a hash table of 1024 buckets (FNV-1, 32 bits, over the
//! key's bytes taken as signed `char`s), puts a new key at the head of its bucket's chain,
//! and iterates buckets in order, each chain from its head. When the table holds twice as
//! many keys as buckets it grows fourfold, moving each chain (head first) to the heads of
//! the new buckets. [`AssocArray`] reproduces exactly that.

/// Buckets of a new table (bash's `ASSOC_HASH_BUCKETS`).
const INITIAL_BUCKETS: usize = 1024;

/// The table grows once it holds this many keys per bucket (bash's `HASH_REHASH_FACTOR`).
const GROW_AT: usize = 2;

/// ... by this factor (bash's `HASH_REHASH_MULTIPLIER`).
const GROW_BY: usize = 4;

/// bash's `hash_string`: FNV-1 over the key's bytes as signed `char`s.
fn hash(key: &str) -> u32 {
    let mut h: u32 = 2_166_136_261;
    for &b in key.as_bytes() {
        h = h.wrapping_mul(16_777_619);
        // A byte past 0x7f is a negative `char`, sign-extended before the xor.
        h ^= b as i8 as i32 as u32;
    }
    h
}

/// An associative array. Each bucket holds its chain tail first (the head is the last
/// element), so inserting at the head is a push.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct AssocArray {
    buckets: Vec<Vec<(String, String)>>,
    len: usize,
}

impl AssocArray {
    pub(crate) fn new() -> AssocArray {
        AssocArray::default()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn slot(&self, key: &str) -> Option<(usize, usize)> {
        if self.buckets.is_empty() {
            return None;
        }
        let b = hash(key) as usize & (self.buckets.len() - 1);
        let i = self.buckets[b].iter().position(|(k, _)| k == key)?;
        Some((b, i))
    }

    pub(crate) fn get(&self, key: &str) -> Option<&String> {
        self.slot(key).map(|(b, i)| &self.buckets[b][i].1)
    }

    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.slot(key).is_some()
    }

    /// Sets `key` to `value`: a key already present keeps its place.
    pub(crate) fn insert(&mut self, key: String, value: String) {
        if let Some((b, i)) = self.slot(&key) {
            self.buckets[b][i].1 = value;
            return;
        }
        if self.buckets.is_empty() {
            self.buckets = vec![Vec::new(); INITIAL_BUCKETS];
        }
        if self.len >= self.buckets.len() * GROW_AT {
            self.grow();
        }
        let b = hash(&key) as usize & (self.buckets.len() - 1);
        self.buckets[b].push((key, value));
        self.len += 1;
    }

    fn grow(&mut self) {
        let n = self.buckets.len() * GROW_BY;
        let old = std::mem::replace(&mut self.buckets, vec![Vec::new(); n]);
        for chain in old {
            // From the head of the old chain, each to the head of its new chain.
            for (k, v) in chain.into_iter().rev() {
                let b = hash(&k) as usize & (n - 1);
                self.buckets[b].push((k, v));
            }
        }
    }

    pub(crate) fn remove(&mut self, key: &str) -> Option<String> {
        let (b, i) = self.slot(key)?;
        self.len -= 1;
        Some(self.buckets[b].remove(i).1)
    }

    /// Keys and values in bash's order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.buckets
            .iter()
            .flat_map(|chain| chain.iter().rev().map(|(k, v)| (k, v)))
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &String> {
        self.iter().map(|(k, _)| k)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &String> {
        self.iter().map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(a: &AssocArray) -> Vec<&str> {
        a.keys().map(String::as_str).collect()
    }

    /// Orders observed from bash 5.2.15.
    #[test]
    fn iterates_in_bash_order() {
        let mut a = AssocArray::new();
        for k in ["a", "b", "c", "foo", "bar", "k10", "k2"] {
            a.insert(k.into(), "1".into());
        }
        assert_eq!(keys(&a), ["c", "b", "a", "k2", "foo", "bar", "k10"]);
        let mut u = AssocArray::new();
        for k in [
            "é", "ü", "ä", "ö", "ß", "日本", "中", "文", "字", "ñ", "ç", "ø", "å",
        ] {
            u.insert(k.into(), String::new());
        }
        assert_eq!(
            keys(&u),
            [
                "日本", "字", "中", "文", "ß", "ö", "ñ", "ü", "ø", "ä", "å", "ç", "é"
            ]
        );
    }

    #[test]
    fn replace_keeps_place_and_remove_forgets_it() {
        let mut a = AssocArray::new();
        for k in ["x", "y", "z"] {
            a.insert(k.into(), "1".into());
        }
        a.insert("x".into(), "7".into());
        assert_eq!(keys(&a), ["z", "y", "x"]);
        assert_eq!(a.remove("y").as_deref(), Some("1"));
        assert_eq!((a.len(), a.get("y")), (2, None));
        assert_eq!(a.get("x").map(String::as_str), Some("7"));
    }

    #[test]
    fn grows_like_bash() {
        let mut a = AssocArray::new();
        for i in 1..=2100 {
            a.insert(format!("k{i}"), i.to_string());
        }
        assert_eq!(a.len(), 2100);
        assert_eq!(
            keys(&a)[..10],
            [
                "k1698", "k1699", "k1696", "k1697", "k1694", "k1695", "k1692", "k1693", "k1690",
                "k1691"
            ]
        );
    }
}
