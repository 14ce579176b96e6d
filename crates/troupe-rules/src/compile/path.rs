//! A session's path kept so that its forks share it (the search of Format
//! 20.5, issue 41): [`PathVec`] is a vector whose older items sit in
//! immutable, reference-counted chunks that every copy shares, and whose
//! newest items are the copy's own. After [`PathVec::freeze`], a clone costs
//! O(1) (one reference count), however long the path; a fork then pays only
//! for the turn it adds. [`PathIndex`] is the matching map from message ID
//! to index.
//!
//! A session that is never forked never freezes: all its items are its own,
//! in one `Vec`, and every operation costs what it costs on a `Vec`.

use std::collections::HashMap;
use std::sync::Arc;

/// How many frozen chunks a path may chain before [`PathVec::freeze`] copies
/// them into one (so that an index reaches its item in at most this many
/// steps, whatever the depth: a search at `--depth 1000` copies its path
/// once every 32 levels).
pub const MAX_CHUNKS: u32 = 32;

/// One frozen chunk: items `start..start + items.len()` of a path.
#[derive(Debug)]
struct Chunk<T> {
    /// The chunk before it (older items), if any.
    prev: Option<Arc<Chunk<T>>>,
    /// The index of its first item.
    start: usize,
    /// How many chunks the chain holds, this one included.
    links: u32,
    items: Vec<T>,
}

/// A vector whose frozen prefix its clones share (see the module's text).
#[derive(Debug)]
pub struct PathVec<T> {
    /// The newest frozen chunk (the shared prefix), if any.
    frozen: Option<Arc<Chunk<T>>>,
    /// How many items the frozen prefix holds.
    base: usize,
    /// This copy's own items after the prefix.
    tail: Vec<T>,
}

impl<T> Default for PathVec<T> {
    fn default() -> Self {
        PathVec {
            frozen: None,
            base: 0,
            tail: Vec::new(),
        }
    }
}

impl<T: Clone> Clone for PathVec<T> {
    /// Shares the frozen prefix; copies only the items added since the last
    /// [`PathVec::freeze`].
    fn clone(&self) -> Self {
        PathVec {
            frozen: self.frozen.clone(),
            base: self.base,
            tail: self.tail.clone(),
        }
    }
}

impl<T> From<Vec<T>> for PathVec<T> {
    fn from(tail: Vec<T>) -> Self {
        PathVec {
            frozen: None,
            base: 0,
            tail,
        }
    }
}

impl<T> FromIterator<T> for PathVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        PathVec::from(iter.into_iter().collect::<Vec<T>>())
    }
}

impl<T> PathVec<T> {
    /// An empty path.
    pub fn new() -> Self {
        PathVec::default()
    }

    /// An empty path with room for `n` items of its own.
    pub fn with_capacity(n: usize) -> Self {
        PathVec::from(Vec::with_capacity(n))
    }

    /// The number of items.
    pub fn len(&self) -> usize {
        self.base + self.tail.len()
    }

    /// Whether there is no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Room for `n` more items of its own.
    pub fn reserve(&mut self, n: usize) {
        self.tail.reserve(n);
    }

    /// The items it has room for without growing (the shared ones counted
    /// as they are).
    pub fn capacity(&self) -> usize {
        self.base + self.tail.capacity()
    }

    /// Item `i`, if any.
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.base {
            return self.tail.get(i - self.base);
        }
        let mut c = self.frozen.as_deref();
        while let Some(chunk) = c {
            if i >= chunk.start {
                return chunk.items.get(i - chunk.start);
            }
            c = chunk.prev.as_deref();
        }
        None
    }

    /// The first item.
    pub fn first(&self) -> Option<&T> {
        self.get(0)
    }

    /// The last item.
    pub fn last(&self) -> Option<&T> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// Adds an item at the end (this copy's own).
    pub fn push(&mut self, x: T) {
        self.tail.push(x);
    }

    /// Removes the last item (a shared chunk it was in is copied first,
    /// unless this copy holds the only reference to it).
    pub fn pop(&mut self) -> Option<T>
    where
        T: Clone,
    {
        if self.tail.is_empty() {
            self.thaw_last();
        }
        self.tail.pop()
    }

    /// Makes the newest frozen chunk this copy's own tail again.
    fn thaw_last(&mut self)
    where
        T: Clone,
    {
        let Some(chunk) = self.frozen.take() else {
            return;
        };
        let (prev, start, items) = match Arc::try_unwrap(chunk) {
            Ok(c) => (c.prev, c.start, c.items),
            Err(shared) => (shared.prev.clone(), shared.start, shared.items.clone()),
        };
        let mut items = items;
        items.append(&mut self.tail);
        self.tail = items;
        self.frozen = prev;
        self.base = start;
    }

    /// Item `i`, to change: an item in a shared chunk makes every item this
    /// copy's own first (rare: a running session changes only the messages
    /// of the turn it is taking).
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T>
    where
        T: Clone,
    {
        if i < self.base {
            self.unshare();
        }
        self.tail.get_mut(i - self.base)
    }

    /// Makes every item this copy's own.
    fn unshare(&mut self)
    where
        T: Clone,
    {
        if self.frozen.is_none() {
            return;
        }
        let mut all = Vec::with_capacity(self.len());
        for s in self.slices() {
            all.extend_from_slice(s);
        }
        *self = PathVec::from(all);
    }

    /// Moves this copy's own items into a frozen chunk that its clones will
    /// share; after it a clone costs O(1). A chain longer than
    /// [`MAX_CHUNKS`] is copied into one chunk first.
    pub fn freeze(&mut self)
    where
        T: Clone,
    {
        if self.tail.is_empty() {
            return;
        }
        let links = self.frozen.as_ref().map_or(0, |c| c.links);
        let (prev, start, items, links) = if links >= MAX_CHUNKS {
            let mut all = Vec::with_capacity(self.len());
            for s in self.slices() {
                all.extend_from_slice(s);
            }
            (None, 0, all, 1)
        } else {
            (
                self.frozen.take(),
                self.base,
                std::mem::take(&mut self.tail),
                links + 1,
            )
        };
        self.frozen = Some(Arc::new(Chunk {
            prev,
            start,
            links,
            items,
        }));
        self.base = self.len_after_freeze(start);
        self.tail = Vec::new();
    }

    fn len_after_freeze(&self, start: usize) -> usize {
        start + self.frozen.as_ref().map_or(0, |c| c.items.len())
    }

    /// The items added since the last [`PathVec::freeze`] (this copy's own).
    pub fn own(&self) -> &[T] {
        &self.tail
    }

    /// The items as slices, oldest first.
    fn slices(&self) -> Vec<&[T]> {
        let mut out = Vec::new();
        let mut c = self.frozen.as_deref();
        while let Some(chunk) = c {
            out.push(chunk.items.as_slice());
            c = chunk.prev.as_deref();
        }
        out.reverse();
        out.push(self.tail.as_slice());
        out
    }

    /// The items in order.
    pub fn iter(&self) -> Iter<'_, T> {
        let len = self.len();
        let inner = if self.frozen.is_none() {
            vec![self.tail.as_slice()]
        } else {
            self.slices()
        };
        Iter {
            inner: inner.into_iter().flatten(),
            len,
        }
    }
}

impl<T> std::ops::Index<usize> for PathVec<T> {
    type Output = T;

    fn index(&self, i: usize) -> &T {
        match self.get(i) {
            Some(x) => x,
            None => panic!("index {i} out of a path of {} items", self.len()),
        }
    }
}

impl<T: Clone> std::ops::IndexMut<usize> for PathVec<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        let len = self.len();
        match self.get_mut(i) {
            Some(x) => x,
            None => panic!("index {i} out of a path of {len} items"),
        }
    }
}

/// The items of a [`PathVec`] in order.
pub struct Iter<'a, T> {
    inner: std::iter::Flatten<std::vec::IntoIter<&'a [T]>>,
    len: usize,
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        let x = self.inner.next()?;
        self.len -= 1;
        Some(x)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }
}

impl<T> DoubleEndedIterator for Iter<'_, T> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let x = self.inner.next_back()?;
        self.len -= 1;
        Some(x)
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}

impl<'a, T> IntoIterator for &'a PathVec<T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

/// Message ID → index, shared by forks as [`PathVec`] shares messages: the IDs
/// of the frozen messages sit in immutable maps the copies share, the newer
/// ones in the copy's own map.
#[derive(Debug, Clone, Default)]
pub struct PathIndex {
    frozen: Option<Arc<IndexChunk>>,
    own: HashMap<Arc<str>, u32>,
}

#[derive(Debug)]
struct IndexChunk {
    prev: Option<Arc<IndexChunk>>,
    links: u32,
    map: HashMap<Arc<str>, u32>,
}

impl PathIndex {
    /// The index of `id`, if any.
    pub fn get(&self, id: &str) -> Option<&u32> {
        if let Some(i) = self.own.get(id) {
            return Some(i);
        }
        let mut c = self.frozen.as_deref();
        while let Some(chunk) = c {
            if let Some(i) = chunk.map.get(id) {
                return Some(i);
            }
            c = chunk.prev.as_deref();
        }
        None
    }

    /// Adds `id` at index `i`; the index it had among the entries added
    /// since the last freeze, if any (the frozen ones are not looked at:
    /// a session writes only new IDs, and a session file's IDs are checked
    /// for duplicates as it is compiled, before anything is frozen). An ID
    /// also frozen is then found under its new index.
    pub fn insert(&mut self, id: Arc<str>, i: u32) -> Option<u32> {
        self.own.insert(id, i)
    }

    /// Removes `id` (only an ID added since the last freeze can be removed;
    /// a frozen one makes every entry this copy's own first).
    pub fn remove(&mut self, id: &str) -> Option<u32> {
        if let Some(i) = self.own.remove(id) {
            return Some(i);
        }
        self.frozen.as_ref()?;
        self.get(id)?;
        self.unshare();
        self.own.remove(id)
    }

    fn unshare(&mut self) {
        let mut chain = Vec::new();
        let mut c = self.frozen.as_deref();
        while let Some(chunk) = c {
            chain.push(chunk);
            c = chunk.prev.as_deref();
        }
        let mut all: HashMap<Arc<str>, u32> = HashMap::with_capacity(self.len());
        for chunk in chain.iter().rev() {
            all.extend(chunk.map.iter().map(|(k, v)| (k.clone(), *v)));
        }
        all.extend(self.own.drain());
        self.frozen = None;
        self.own = all;
    }

    /// Room for `n` more entries of its own.
    pub fn reserve(&mut self, n: usize) {
        self.own.reserve(n);
    }

    /// The entries it has room for (the shared ones counted as they are).
    #[cfg(any(test, feature = "internals"))]
    pub fn capacity(&self) -> usize {
        self.own.capacity() + self.frozen_len()
    }

    fn frozen_len(&self) -> usize {
        let mut n = 0;
        let mut c = self.frozen.as_deref();
        while let Some(chunk) = c {
            n += chunk.map.len();
            c = chunk.prev.as_deref();
        }
        n
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.own.len() + self.frozen_len()
    }

    /// Whether there is no entry.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.own.is_empty() && self.frozen.is_none()
    }

    /// Moves this copy's own entries into a frozen map its clones share
    /// (with [`PathVec::freeze`]).
    pub fn freeze(&mut self) {
        if self.own.is_empty() {
            return;
        }
        let links = self.frozen.as_ref().map_or(0, |c| c.links);
        if links >= MAX_CHUNKS {
            self.unshare();
            self.frozen = Some(Arc::new(IndexChunk {
                prev: None,
                links: 1,
                map: std::mem::take(&mut self.own),
            }));
            return;
        }
        self.frozen = Some(Arc::new(IndexChunk {
            prev: self.frozen.take(),
            links: links + 1,
            map: std::mem::take(&mut self.own),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(p: &PathVec<u32>) -> Vec<u32> {
        p.iter().copied().collect()
    }

    #[test]
    fn a_frozen_path_is_shared_and_reads_like_a_vec() {
        let mut a: PathVec<u32> = (0..3).collect();
        a.freeze();
        let mut b = a.clone();
        b.push(3);
        b.push(4);
        b.freeze();
        b.push(5);
        let mut c = b.clone();
        c.push(6);
        a.push(10);
        assert_eq!(items(&a), [0, 1, 2, 10]);
        assert_eq!(items(&b), [0, 1, 2, 3, 4, 5]);
        assert_eq!(items(&c), [0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(c.len(), 7);
        assert_eq!(c[4], 4);
        assert_eq!(c.get(7), None);
        assert_eq!(c.last(), Some(&6));
        assert_eq!(c.first(), Some(&0));
        let back: Vec<(usize, u32)> = c.iter().copied().enumerate().rev().collect();
        assert_eq!(back[0], (6, 6));
        assert_eq!(back[6], (0, 0));
        // Popping into a shared chunk copies it; the others keep theirs.
        for _ in 0..5 {
            c.pop();
        }
        assert_eq!(items(&c), [0, 1]);
        assert_eq!(items(&b), [0, 1, 2, 3, 4, 5]);
        // Changing a shared item changes only this copy.
        b[1] = 100;
        assert_eq!(items(&b), [0, 100, 2, 3, 4, 5]);
        assert_eq!(items(&a), [0, 1, 2, 10]);
    }

    #[test]
    fn a_long_chain_is_copied_into_one_chunk() {
        let mut p: PathVec<u32> = PathVec::new();
        for i in 0..100 {
            p.push(i);
            p.freeze();
            let q = p.clone();
            assert!(q.frozen.as_ref().is_some_and(|c| c.links <= MAX_CHUNKS));
        }
        assert_eq!(items(&p), (0..100).collect::<Vec<_>>());
        assert_eq!(p[0], 0);
        assert_eq!(p[99], 99);
    }

    #[test]
    fn the_index_is_shared_like_the_path() {
        let mut a = PathIndex::default();
        a.insert(Arc::from("m1"), 0);
        a.freeze();
        let mut b = a.clone();
        b.insert(Arc::from("m2"), 1);
        assert_eq!(b.get("m1"), Some(&0));
        assert_eq!(b.get("m2"), Some(&1));
        assert_eq!(a.get("m2"), None);
        assert_eq!(b.remove("m2"), Some(1));
        assert_eq!(b.remove("m1"), Some(0));
        assert_eq!(a.get("m1"), Some(&0));
        assert_eq!(b.len(), 0);
        for i in 0..100u32 {
            a.insert(Arc::from(format!("x{i}").as_str()), i);
            a.freeze();
        }
        assert_eq!(a.get("x0"), Some(&0));
        assert_eq!(a.get("m1"), Some(&0));
        assert_eq!(a.len(), 101);
    }
}
