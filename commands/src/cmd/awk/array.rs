//! awk arrays stored the way gawk 5.2 stores them, so that `for (k in a)` (and everything
//! else that walks an array unsorted) visits the elements in gawk's order.
//!
//! gawk gives an empty array its kind when the first element goes in, and may hang a
//! second table of another kind (the "extra" table) off it:
//!
//! - **cint** — first subscript a non-negative integer. Such integers sit in slots walked
//!   in ascending order; other subscripts (and non-negative integers that would leave
//!   too much of the slot space unused) go to the extra table, an int or a string table
//!   chosen by the first subscript it gets. A walk visits the extra table first.
//! - **int** — first subscript a negative integer: a chained hash table of integers
//!   (two per bucket), with a string table as its extra table for everything else,
//!   walked first.
//! - **str** — anything else: a chained hash table of strings, new elements at the head
//!   of their chain.
//!
//! A subscript counts as an integer when it is written as `sprintf("%d")` would write it
//! (`0`, or an optional `-` and digits not starting with 0) and fits in 32 bits. When the
//! last element of a table goes, the array forgets its kind; when the main part of a
//! cint or int table empties while its extra table still holds elements, the extra table
//! becomes the array. Sizes, growth points and hash functions follow gawk so that the
//! orders agree element for element.

use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

/// A subscript's bytes, shared cheaply.
pub type Str = Rc<[u8]>;

/// End of a chain.
const NIL: u32 = u32::MAX;

/// Bucket counts a hash table steps through as it grows (primes: an order of magnitude at
/// first, then about doubling); past the last the table stops growing.
const TABLE_SIZES: [u32; 21] = [
    13, 127, 1021, 8191, 16381, 32749, 65497, 131101, 262147, 524309, 1048583, 2097169, 4194319,
    8388617, 16777259, 33554467, 67108879, 134217757, 268435459, 536870923, 1073741827,
];

/// A string table grows when its elements exceed this many per bucket on average
/// (integer division, as gawk's test is).
const STR_CHAIN_MAX: usize = 2;
/// The same for an int table.
const INT_CHAIN_MAX: usize = 2;
/// log2 of the smallest slot block of a cint table: integers below 2^NHAT share one tree.
const NHAT: u32 = 10;
/// Slots a cint table may leave unused before further integers go to its extra table.
const THRESHOLD: i64 = 1 << (NHAT + 1);

/// The integer gawk files a subscript under: `0`, or an optional `-` then a digit 1–9
/// and more digits, within 32 bits. `"01"`, `"-0"`, `"+1"`, `" 1"` and `"1e3"` are
/// strings.
pub fn int_subscript(k: &[u8]) -> Option<i32> {
    let digits = k.strip_prefix(b"-").unwrap_or(k);
    let neg = digits.len() != k.len();
    match digits.first() {
        Some(b'0') => return (k.len() == 1).then_some(0),
        Some(b'1'..=b'9') if digits.len() <= 10 => {}
        _ => return None,
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + i64::from(d - b'0');
    }
    i32::try_from(if neg { -n } else { n }).ok()
}

/// The string tables' hash: each byte (as a signed char) added to 65599 times the hash
/// so far, in 32 bits.
fn str_hash(s: &[u8]) -> u32 {
    s.iter().fold(0u32, |h, &c| {
        h.wrapping_mul(65599)
            .wrapping_add(i32::from(c as i8) as u32)
    })
}

/// The int tables' hash: a shift-xor-add mix of the integer's 32 bits.
fn int_hash(k: i32) -> u32 {
    let mut k = k as u32;
    k ^= k << 3;
    k = k.wrapping_add(k >> 5);
    k ^= k << 4;
    k = k.wrapping_add(k >> 17);
    k ^= k << 25;
    k.wrapping_add(k >> 6)
}

/// The bucket count after `size`, or `None` at the largest.
fn next_size(size: u32) -> Option<u32> {
    TABLE_SIZES.iter().copied().find(|&s| s > size)
}

/// How an element's subscript reads back in `for (k in a)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// Filed as an integer: compares as a number.
    Int,
    /// A string subscript that came from input (a field, `getline`): a strnum.
    StrNum,
    /// Any other string subscript: a string.
    Str,
}

/// One element as a walk shows it.
pub struct Entry<'a, V> {
    pub key: &'a Str,
    pub kind: KeyKind,
    pub val: &'a V,
}

// ---- string tables ----

struct StrElem<V> {
    key: Str,
    strnum: bool,
    code: u32,
    next: u32,
    val: V,
}

/// A chained hash table of strings: `heads[code % heads.len()]` starts each chain.
struct StrTable<V> {
    heads: Vec<u32>,
    slots: Vec<Option<StrElem<V>>>,
    free: Vec<u32>,
    len: usize,
    /// The table is at its largest size.
    maxed: bool,
}

impl<V> StrTable<V> {
    fn new() -> Self {
        StrTable {
            heads: vec![NIL; TABLE_SIZES[0] as usize],
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
            maxed: false,
        }
    }

    /// The element in slot `i` (a chain links only live slots; `NIL` is none).
    fn elem(&self, i: u32) -> Option<&StrElem<V>> {
        self.slots.get(i as usize).and_then(Option::as_ref)
    }

    fn elem_mut(&mut self, i: u32) -> Option<&mut StrElem<V>> {
        self.slots.get_mut(i as usize).and_then(Option::as_mut)
    }

    fn find(&self, key: &[u8], code: u32) -> Option<u32> {
        let mut i = self.heads[(code % self.heads.len() as u32) as usize];
        while let Some(e) = self.elem(i) {
            if e.code == code && *e.key == *key {
                return Some(i);
            }
            i = e.next;
        }
        None
    }

    fn get(&self, key: &[u8]) -> Option<&V> {
        let i = self.find(key, str_hash(key))?;
        self.elem(i).map(|e| &e.val)
    }

    fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let i = self.find(key, str_hash(key))?;
        self.elem_mut(i).map(|e| &mut e.val)
    }

    /// Puts a value at `key`: replaces it in place when present (giving back the old
    /// one), else adds an element at the head of its chain, growing the table first.
    fn insert(&mut self, key: Str, strnum: bool, val: V) -> Option<V> {
        let code = str_hash(&key);
        if let Some(e) = self.find(&key, code).and_then(|i| self.elem_mut(i)) {
            return Some(std::mem::replace(&mut e.val, val));
        }
        self.len += 1;
        if !self.maxed && self.len / self.heads.len() > STR_CHAIN_MAX {
            self.grow();
        }
        let b = (code % self.heads.len() as u32) as usize;
        let elem = StrElem {
            key,
            strnum,
            code,
            next: self.heads[b],
            val,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(elem);
                i
            }
            None => {
                self.slots.push(Some(elem));
                (self.slots.len() - 1) as u32
            }
        };
        self.heads[b] = i;
        None
    }

    /// Moves every element to a larger table: old buckets in order, each chain from its
    /// head, each element pushed onto the head of its new chain.
    fn grow(&mut self) {
        let Some(size) = next_size(self.heads.len() as u32) else {
            self.maxed = true;
            return;
        };
        let old = std::mem::replace(&mut self.heads, vec![NIL; size as usize]);
        for head in old {
            let mut i = head;
            while let Some(e) = self.slots.get_mut(i as usize).and_then(Option::as_mut) {
                let next = e.next;
                let b = (e.code % size) as usize;
                e.next = self.heads[b];
                self.heads[b] = i;
                i = next;
            }
        }
    }

    fn remove(&mut self, key: &[u8]) -> Option<V> {
        let code = str_hash(key);
        let b = (code % self.heads.len() as u32) as usize;
        let mut prev = NIL;
        let mut i = self.heads[b];
        while let Some(e) = self.elem(i) {
            let next = e.next;
            if e.code == code && *e.key == *key {
                match self.elem_mut(prev) {
                    Some(p) => p.next = next,
                    None => self.heads[b] = next,
                }
                self.len -= 1;
                self.free.push(i);
                return self.slots[i as usize].take().map(|e| e.val);
            }
            prev = i;
            i = next;
        }
        None
    }

    fn walk<'a>(&'a self, out: &mut Vec<Entry<'a, V>>) {
        for &head in &self.heads {
            let mut i = head;
            while let Some(e) = self.elem(i) {
                out.push(Entry {
                    key: &e.key,
                    kind: if e.strnum {
                        KeyKind::StrNum
                    } else {
                        KeyKind::Str
                    },
                    val: &e.val,
                });
                i = e.next;
            }
        }
    }
}

// ---- int tables ----

struct IntItem<V> {
    num: i32,
    key: Str,
    val: V,
}

/// A bucket of an int table: up to two elements; only the head bucket of a chain may
/// hold one.
struct IntBucket<V> {
    items: [Option<IntItem<V>>; 2],
    next: u32,
}

/// A chained hash table of 32-bit integers, with a string table for other subscripts.
struct IntTable<V> {
    heads: Vec<u32>,
    buckets: Vec<IntBucket<V>>,
    free: Vec<u32>,
    /// Integer elements (the string table not counted).
    len: usize,
    maxed: bool,
    extra: Option<Box<StrTable<V>>>,
}

impl<V> IntTable<V> {
    fn new() -> Self {
        IntTable {
            heads: vec![NIL; TABLE_SIZES[0] as usize],
            buckets: Vec::new(),
            free: Vec::new(),
            len: 0,
            maxed: false,
            extra: None,
        }
    }

    fn total(&self) -> usize {
        self.len + self.extra.as_ref().map_or(0, |x| x.len)
    }

    fn slot(&self, n: i32) -> usize {
        (int_hash(n) % self.heads.len() as u32) as usize
    }

    fn find(&self, n: i32) -> Option<(u32, usize)> {
        let mut b = self.heads[self.slot(n)];
        while b != NIL {
            let bucket = &self.buckets[b as usize];
            for (j, item) in bucket.items.iter().enumerate() {
                if item.as_ref().is_some_and(|it| it.num == n) {
                    return Some((b, j));
                }
            }
            b = bucket.next;
        }
        None
    }

    fn item(&self, at: (u32, usize)) -> Option<&IntItem<V>> {
        self.buckets[at.0 as usize].items[at.1].as_ref()
    }

    fn item_mut(&mut self, at: (u32, usize)) -> Option<&mut IntItem<V>> {
        self.buckets[at.0 as usize].items[at.1].as_mut()
    }

    fn get(&self, key: &[u8]) -> Option<&V> {
        match int_subscript(key) {
            Some(n) => self.find(n).and_then(|at| self.item(at)).map(|it| &it.val),
            None => self.extra.as_ref()?.get(key),
        }
    }

    fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        match int_subscript(key) {
            Some(n) => {
                let at = self.find(n)?;
                self.item_mut(at).map(|it| &mut it.val)
            }
            None => self.extra.as_mut()?.get_mut(key),
        }
    }

    fn insert(&mut self, key: Str, strnum: bool, val: V) -> Option<V> {
        let Some(n) = int_subscript(&key) else {
            return self
                .extra
                .get_or_insert_with(|| Box::new(StrTable::new()))
                .insert(key, strnum, val);
        };
        if let Some(at) = self.find(n)
            && let Some(it) = self.item_mut(at)
        {
            return Some(std::mem::replace(&mut it.val, val));
        }
        self.len += 1;
        if !self.maxed && self.len / self.heads.len() > INT_CHAIN_MAX {
            self.grow();
        }
        let h = self.slot(n);
        self.put(h, IntItem { num: n, key, val });
        None
    }

    /// Adds an item to chain `h`: into its head bucket when that has room, else into a
    /// new bucket that becomes the head.
    fn put(&mut self, h: usize, item: IntItem<V>) {
        let head = self.heads[h];
        if head != NIL {
            let b = &mut self.buckets[head as usize];
            if b.items[1].is_none() {
                b.items[1] = Some(item);
                return;
            }
        }
        let bucket = IntBucket {
            items: [Some(item), None],
            next: head,
        };
        let b = match self.free.pop() {
            Some(b) => {
                self.buckets[b as usize] = bucket;
                b
            }
            None => {
                self.buckets.push(bucket);
                (self.buckets.len() - 1) as u32
            }
        };
        self.heads[h] = b;
    }

    /// Re-adds every item to a larger table: old buckets in order, each chain from its
    /// head, each bucket's items in order.
    fn grow(&mut self) {
        let Some(size) = next_size(self.heads.len() as u32) else {
            self.maxed = true;
            return;
        };
        let old_heads = std::mem::replace(&mut self.heads, vec![NIL; size as usize]);
        let mut old = std::mem::take(&mut self.buckets);
        self.free.clear();
        for head in old_heads {
            let mut b = head;
            while b != NIL {
                let bucket = &mut old[b as usize];
                let items = [bucket.items[0].take(), bucket.items[1].take()];
                b = bucket.next;
                for item in items.into_iter().flatten() {
                    let h = self.slot(item.num);
                    self.put(h, item);
                }
            }
        }
    }

    /// Takes an integer's item out, keeping every bucket but a chain's head full: the
    /// head's last item fills the hole.
    fn remove_int(&mut self, n: i32) -> Option<V> {
        let h = self.slot(n);
        let mut prev = NIL;
        let mut b = self.heads[h];
        while b != NIL {
            let found = self.buckets[b as usize]
                .items
                .iter()
                .position(|it| it.as_ref().is_some_and(|it| it.num == n));
            if let Some(j) = found {
                let bucket = &mut self.buckets[b as usize];
                let taken = bucket.items[j].take();
                if j == 0 {
                    bucket.items[0] = bucket.items[1].take();
                }
                let next = bucket.next;
                let head = self.heads[h];
                if bucket.items[0].is_none() {
                    if prev == NIL {
                        self.heads[h] = next;
                    } else {
                        self.buckets[prev as usize].next = next;
                    }
                    self.free.push(b);
                } else if b != head {
                    let hb = &mut self.buckets[head as usize];
                    let moved = match hb.items[1].take() {
                        Some(it) => Some(it),
                        None => hb.items[0].take(),
                    };
                    let head_next = hb.next;
                    let head_empty = hb.items[0].is_none();
                    self.buckets[b as usize].items[1] = moved;
                    if head_empty {
                        self.heads[h] = head_next;
                        self.free.push(head);
                    }
                }
                self.len -= 1;
                return taken.map(|it| it.val);
            }
            prev = b;
            b = self.buckets[b as usize].next;
        }
        None
    }

    fn walk<'a>(&'a self, out: &mut Vec<Entry<'a, V>>) {
        if let Some(x) = &self.extra {
            x.walk(out);
        }
        for &head in &self.heads {
            let mut b = head;
            while b != NIL {
                let bucket = &self.buckets[b as usize];
                for it in bucket.items.iter().flatten() {
                    out.push(Entry {
                        key: &it.key,
                        kind: KeyKind::Int,
                        val: &it.val,
                    });
                }
                b = bucket.next;
            }
        }
    }
}

// ---- cint tables ----

/// The block of slots (its first integer and its size) that holds `k` in a cint table:
/// integers below 2^NHAT in blocks of 32; each power-of-two range above in blocks of
/// 2^ceil(m/2) for range [2^m, 2^(m+1)), split again while that exceeds 2^NHAT.
fn leaf_of(k: u32) -> (u32, u32) {
    let (mut m, mut base) = match k.checked_ilog2() {
        Some(r) if r >= NHAT => (r, 1u32 << r),
        _ => (NHAT, 0),
    };
    loop {
        let n = m.div_ceil(2);
        let size = 1u32 << n;
        base += (k - base) / size * size;
        if n <= NHAT {
            return (base, size);
        }
        m = n;
    }
}

/// gawk's guess of the slots a new block for `k` would add, used only to decide whether
/// `k` goes to the extra table.
fn leaf_estimate(k: u32) -> i64 {
    let mut li = match k.checked_ilog2() {
        Some(r) if r >= NHAT => r.max(NHAT),
        _ => NHAT,
    };
    while li >= NHAT {
        li = li.div_ceil(2);
    }
    1i64 << li
}

/// One block of a cint table's slots.
struct Leaf<V> {
    /// Slots in use.
    count: u32,
    slots: Box<[Option<(Str, V)>]>,
}

/// Non-negative integers in slots walked in ascending order, plus an extra table.
struct CintTable<V> {
    /// The allocated blocks by their first integer.
    leaves: HashMap<u32, Leaf<V>, foldhash::fast::RandomState>,
    /// Elements in the slots.
    len: usize,
    /// Slots in allocated blocks.
    capacity: i64,
    extra: Option<Box<Table<V>>>,
}

impl<V> CintTable<V> {
    fn new() -> Self {
        CintTable {
            leaves: HashMap::default(),
            len: 0,
            capacity: 0,
            extra: None,
        }
    }

    fn total(&self) -> usize {
        self.len + self.extra.as_ref().map_or(0, |x| x.len())
    }

    fn uint(key: &[u8]) -> Option<u32> {
        int_subscript(key).and_then(|n| u32::try_from(n).ok())
    }

    fn slot(&self, k: u32) -> Option<&(Str, V)> {
        let (base, _) = leaf_of(k);
        self.leaves.get(&base)?.slots[(k - base) as usize].as_ref()
    }

    fn slot_mut(&mut self, k: u32) -> Option<&mut (Str, V)> {
        let (base, _) = leaf_of(k);
        self.leaves.get_mut(&base)?.slots[(k - base) as usize].as_mut()
    }

    fn get(&self, key: &[u8]) -> Option<&V> {
        if let Some(k) = Self::uint(key)
            && let Some((_, v)) = self.slot(k)
        {
            return Some(v);
        }
        self.extra.as_ref()?.get(key)
    }

    fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        if let Some(k) = Self::uint(key)
            && self.slot(k).is_some()
        {
            return self.slot_mut(k).map(|(_, v)| v);
        }
        self.extra.as_mut()?.get_mut(key)
    }

    fn insert(&mut self, key: Str, strnum: bool, val: V) -> Option<V> {
        let k = Self::uint(&key);
        if let Some(k) = k
            && let Some((_, v)) = self.slot_mut(k)
        {
            return Some(std::mem::replace(v, val));
        }
        if let Some(x) = self.extra.as_mut()
            && let Some(v) = x.get_mut(&key)
        {
            return Some(std::mem::replace(v, val));
        }
        if let Some(k) = k
            && self.capacity + leaf_estimate(k) - self.len as i64 <= THRESHOLD
        {
            let (base, size) = leaf_of(k);
            let leaf = self.leaves.entry(base).or_insert_with(|| Leaf {
                count: 0,
                slots: (0..size).map(|_| None).collect(),
            });
            if leaf.count == 0 {
                self.capacity += i64::from(size);
            }
            leaf.count += 1;
            leaf.slots[(k - base) as usize] = Some((key, val));
            self.len += 1;
            return None;
        }
        let x = self.extra.get_or_insert_with(|| {
            Box::new(if int_subscript(&key).is_some() {
                Table::Int(IntTable::new())
            } else {
                Table::Str(StrTable::new())
            })
        });
        x.insert(key, strnum, val)
    }

    /// Takes integer `k` out of the slots; a block left empty is freed.
    fn remove_uint(&mut self, k: u32) -> Option<V> {
        let (base, size) = leaf_of(k);
        let leaf = self.leaves.get_mut(&base)?;
        let (_, v) = leaf.slots[(k - base) as usize].take()?;
        leaf.count -= 1;
        if leaf.count == 0 {
            self.leaves.remove(&base);
            self.capacity -= i64::from(size);
        }
        self.len -= 1;
        Some(v)
    }

    fn walk<'a>(&'a self, out: &mut Vec<Entry<'a, V>>) {
        if let Some(x) = &self.extra {
            x.walk(out);
        }
        let mut bases: Vec<&u32> = self.leaves.keys().collect();
        bases.sort_unstable();
        for base in bases {
            let Some(leaf) = self.leaves.get(base) else {
                continue;
            };
            for (key, val) in leaf.slots.iter().flatten() {
                out.push(Entry {
                    key,
                    kind: KeyKind::Int,
                    val,
                });
            }
        }
    }
}

// ---- the array ----

enum Table<V> {
    /// No element: the next subscript decides the kind.
    Null,
    Str(StrTable<V>),
    Int(IntTable<V>),
    Cint(CintTable<V>),
}

impl<V> Table<V> {
    fn len(&self) -> usize {
        match self {
            Table::Null => 0,
            Table::Str(t) => t.len,
            Table::Int(t) => t.total(),
            Table::Cint(t) => t.total(),
        }
    }

    fn get(&self, key: &[u8]) -> Option<&V> {
        match self {
            Table::Null => None,
            Table::Str(t) => t.get(key),
            Table::Int(t) => t.get(key),
            Table::Cint(t) => t.get(key),
        }
    }

    fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        match self {
            Table::Null => None,
            Table::Str(t) => t.get_mut(key),
            Table::Int(t) => t.get_mut(key),
            Table::Cint(t) => t.get_mut(key),
        }
    }

    fn insert(&mut self, key: Str, strnum: bool, val: V) -> Option<V> {
        if let Table::Null = self {
            *self = match int_subscript(&key) {
                Some(n) if n >= 0 => Table::Cint(CintTable::new()),
                Some(_) => Table::Int(IntTable::new()),
                None => Table::Str(StrTable::new()),
            };
        }
        match self {
            Table::Null => None,
            Table::Str(t) => t.insert(key, strnum, val),
            Table::Int(t) => t.insert(key, strnum, val),
            Table::Cint(t) => t.insert(key, strnum, val),
        }
    }

    /// Takes `key` out; the table forgets its kind when it empties, and a cint or int
    /// table whose own part empties becomes its extra table.
    fn remove(&mut self, key: &[u8]) -> Option<V> {
        let (got, promote) = match self {
            Table::Null => return None,
            Table::Str(t) => (t.remove(key), false),
            Table::Int(t) => match int_subscript(key) {
                Some(n) => (t.remove_int(n), t.len == 0),
                None => {
                    let x = t.extra.as_mut()?;
                    let got = x.remove(key);
                    if x.len == 0 {
                        t.extra = None;
                    }
                    (got, false)
                }
            },
            Table::Cint(t) => match CintTable::<V>::uint(key).and_then(|k| t.remove_uint(k)) {
                Some(v) => (Some(v), t.len == 0),
                None => {
                    let x = t.extra.as_mut()?;
                    let got = x.remove(key);
                    if x.len() == 0 {
                        t.extra = None;
                    }
                    (got, false)
                }
            },
        };
        if promote {
            let extra = match self {
                Table::Int(t) => t.extra.take().map(|x| Table::Str(*x)),
                Table::Cint(t) => t.extra.take().map(|x| *x),
                _ => None,
            };
            *self = extra.unwrap_or(Table::Null);
        } else if self.len() == 0 {
            *self = Table::Null;
        }
        got
    }

    fn walk<'a>(&'a self, out: &mut Vec<Entry<'a, V>>) {
        match self {
            Table::Null => {}
            Table::Str(t) => t.walk(out),
            Table::Int(t) => t.walk(out),
            Table::Cint(t) => t.walk(out),
        }
    }
}

/// An awk array (or subarray): elements by subscript, walked in gawk's order.
pub struct GawkArray<V> {
    table: Table<V>,
}

impl<V> Default for GawkArray<V> {
    fn default() -> Self {
        GawkArray { table: Table::Null }
    }
}

impl<V: fmt::Debug> fmt::Debug for GawkArray<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(
                self.entries()
                    .into_iter()
                    .map(|e| (String::from_utf8_lossy(e.key), e.val)),
            )
            .finish()
    }
}

impl<V> GawkArray<V> {
    pub fn len(&self) -> usize {
        self.table.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.table.get(key)
    }

    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `val`, giving back the value it replaces; a new subscript that is
    /// filed as a string reads back as a string.
    pub fn insert(&mut self, key: Str, val: V) -> Option<V> {
        self.table.insert(key, false, val)
    }

    /// As [`insert`](Self::insert), saying whether a new string subscript came from
    /// input and so reads back as a strnum.
    pub fn insert_typed(&mut self, key: Str, strnum: bool, val: V) -> Option<V> {
        self.table.insert(key, strnum, val)
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        self.table.remove(key)
    }

    /// Deletes every element; the array forgets its kind.
    pub fn clear(&mut self) {
        self.table = Table::Null;
    }

    /// The elements in the order gawk walks them.
    pub fn entries(&self) -> Vec<Entry<'_, V>> {
        let mut out = Vec::with_capacity(self.len());
        self.table.walk(&mut out);
        out
    }

    /// Subscripts and values in the order gawk walks them, copied out.
    pub fn cloned_entries(&self) -> Vec<(Str, V)>
    where
        V: Clone,
    {
        self.entries()
            .into_iter()
            .map(|e| (e.key.clone(), e.val.clone()))
            .collect()
    }

    /// The subscripts in the order gawk walks them.
    #[cfg(test)]
    pub fn keys(&self) -> Vec<Str> {
        self.entries().into_iter().map(|e| e.key.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(keys: &[&str]) -> GawkArray<u32> {
        let mut a = GawkArray::default();
        for (i, k) in keys.iter().enumerate() {
            a.insert(Rc::from(k.as_bytes()), i as u32);
        }
        a
    }

    fn order(a: &GawkArray<u32>) -> Vec<String> {
        a.keys()
            .iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect()
    }

    #[test]
    fn integers_as_gawk_files_them() {
        assert_eq!(int_subscript(b"0"), Some(0));
        assert_eq!(int_subscript(b"-12"), Some(-12));
        assert_eq!(int_subscript(b"2147483647"), Some(i32::MAX));
        assert_eq!(int_subscript(b"-2147483648"), Some(i32::MIN));
        for s in [
            "",
            "-",
            "-0",
            "01",
            "+1",
            " 1",
            "1 ",
            "1e3",
            "1.0",
            "2147483648",
            "x",
        ] {
            assert_eq!(int_subscript(s.as_bytes()), None, "{s}");
        }
    }

    #[test]
    fn blocks_of_a_cint_table() {
        assert_eq!(leaf_of(0), (0, 32));
        assert_eq!(leaf_of(1023), (992, 32));
        assert_eq!(leaf_of(1024), (1024, 32));
        assert_eq!(leaf_of(3000), (2944, 64));
        assert_eq!(leaf_of(1 << 20), (1 << 20, 1024));
        assert_eq!(leaf_of((1 << 21) + 100), ((1 << 21) + 64, 64));
        assert_eq!(leaf_estimate(5), 32);
        assert_eq!(leaf_estimate(1 << 18), 512);
    }

    #[test]
    fn walks_match_gawk() {
        // Recorded from gawk 5.2.1.
        assert_eq!(
            order(&arr(&["x", "y", "z", "1", "-1", "01"])),
            ["-1", "x", "y", "z", "01", "1"]
        );
        let a = arr(&["3", "1", "2", "b", "a"]);
        assert_eq!(order(&a), ["a", "b", "1", "2", "3"]);
    }

    #[test]
    fn emptied_tables_forget_their_kind() {
        let mut a = arr(&["1", "x"]);
        a.remove(b"1");
        a.insert(Rc::from(&b"5"[..]), 9);
        assert_eq!(a.len(), 2);
        a.remove(b"5");
        a.remove(b"x");
        assert!(a.is_empty());
        a.insert(Rc::from(&b"-3"[..]), 1);
        assert!(matches!(a.table, Table::Int(_)));
    }
}
