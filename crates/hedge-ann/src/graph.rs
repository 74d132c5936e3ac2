use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::distance::{with_distance, RowDistance};
use crate::visited::{Visited, VisitedPool};
use crate::{AnnConfig, AnnError, Result};

/// Layers above 0 a point may reach; with M ≥ 2 a point reaches layer 32 with probability
/// 2⁻³², so the cap only bounds what a damaged file can ask for.
pub(crate) const MAX_LEVEL: u8 = 32;
/// The level draws are seeded: the same points give the same layer sizes on every machine.
const LEVEL_SEED: u64 = 0x0048_4544_4745;
/// How many inserts pass between two calls of a build's progress callback.
const PROGRESS_EVERY: usize = 1024;

/// A distance (squared Euclidean) and a point, ordered by distance, then by point.
///
/// Both live in one integer, the distance's bits above the point's index: a squared distance is
/// never negative, and non-negative floats order as their bit patterns do, so one integer
/// comparison orders the pair (the heaps of a search compare little else).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Scored(u64);

impl Scored {
    #[inline(always)]
    pub(crate) fn new(dist: f32, id: u32) -> Self {
        Scored(u64::from(dist.to_bits()) << 32 | u64::from(id))
    }

    #[inline(always)]
    pub(crate) fn dist(self) -> f32 {
        f32::from_bits((self.0 >> 32) as u32)
    }

    #[inline(always)]
    pub(crate) fn id(self) -> u32 {
        self.0 as u32
    }
}

/// Sixteen floats on one cache line: the points are stored in these, so that a row of D = 16
/// (the usual embedding size) is one line, not two.
#[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
pub(crate) struct Line([f32; 16]);

/// `values` copied into cache lines (the tail of the last line zero).
pub(crate) fn lines(values: &[f32]) -> Vec<Line> {
    let mut out = vec![Line::default(); values.len().div_ceil(16)];
    bytemuck::cast_slice_mut::<Line, f32>(&mut out)[..values.len()].copy_from_slice(values);
    out
}

/// The buffers of one search, reused from query to query (a worker keeps one).
#[derive(Default)]
pub(crate) struct Scratch {
    candidates: BinaryHeap<Reverse<Scored>>,
    nearest: BinaryHeap<Scored>,
    links: Vec<u32>,
    scores: Vec<f32>,
    found: Vec<Scored>,
}

/// A hierarchical navigable small-world graph over fixed `dim`-dimensional points (Euclidean).
///
/// Every link list is a count followed by its links, stored as relaxed atomics: while the graph
/// is built, a point's lock is held to copy or change its list; once built, searches read the
/// lists without locks (the atomics compile to plain loads).
pub struct Hnsw {
    pub(crate) dim: usize,
    pub(crate) config: AnnConfig,
    /// `[n * dim]`, row by row, from a cache line's start (the last line's tail unused).
    pub(crate) points: Vec<Line>,
    /// The top layer of every point.
    pub(crate) levels: Vec<u8>,
    /// Layer 0: `n` lists of `2M + 1` slots.
    pub(crate) links0: Vec<AtomicU32>,
    /// Layers 1..=level of every point with a level above 0: `level` lists of `M + 1` slots each.
    pub(crate) upper: Vec<AtomicU32>,
    /// Where each point's upper lists start in `upper`.
    pub(crate) upper_start: Vec<u32>,
    pub(crate) entry: u32,
    pub(crate) max_level: u8,
    visited: VisitedPool,
}

/// What only a build needs: a lock per point and the entry point, which an insert on a new top
/// layer changes.
struct Building {
    locks: Vec<Mutex<()>>,
    top: Mutex<(u32, u8)>,
}

impl Hnsw {
    /// Inserts every point (rows of `points`, `[n * dim]`), in parallel on rayon's threads.
    pub fn build(points: &[f32], dim: usize, config: &AnnConfig) -> Result<Self> {
        Self::build_with_progress(points, dim, config, &|_| {})
    }

    /// [`Hnsw::build`], calling `progress` with the number of points inserted so far every
    /// 1,024 inserts (from any thread).
    pub fn build_with_progress(
        points: &[f32],
        dim: usize,
        config: &AnnConfig,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<Self> {
        config.check()?;
        if dim == 0 || points.is_empty() || !points.len().is_multiple_of(dim) {
            return Err(AnnError::invalid(
                "points",
                points.len(),
                format!("need a non-empty [n, {dim}] array (its length a multiple of {dim})"),
            ));
        }
        let n = points.len() / dim;
        if n >= u32::MAX as usize {
            return Err(AnnError::invalid(
                "points",
                n,
                "one graph holds fewer than 2³² points; split the gallery into shards",
            ));
        }
        if let Some(i) = points.iter().position(|v| !v.is_finite()) {
            return Err(AnnError::invalid(
                "points",
                format!("row {} = {}", i / dim, points[i]),
                "a point is not finite; the model diverged or the input is broken",
            ));
        }
        let m = config.max_connections;
        hedge_run::Footprint::new("the HNSW graph", |v| v[0] * Self::bytes_per_point(dim, m) as f64)
            .knob("points", n as f64, 1.0)
            .check()?;
        let levels = draw_levels(n, m);
        let mut graph = Self::empty(lines(points), dim, *config, levels)?;
        let building = Building {
            locks: (0..n).map(|_| Mutex::new(())).collect(),
            top: Mutex::new((graph.entry, graph.max_level)),
        };
        // Workers take the next point from one counter, so they insert interleaved points
        // (contiguous halves would grow two graphs that meet late).
        let next = AtomicUsize::new(1);
        rayon::scope(|scope| {
            for _ in 0..rayon::current_num_threads() {
                scope.spawn(|_| {
                    let mut scratch = Scratch::default();
                    loop {
                        let q = next.fetch_add(1, Relaxed);
                        if q >= n {
                            break;
                        }
                        graph.insert(q as u32, &building, &mut scratch);
                        if q.is_multiple_of(PROGRESS_EVERY) {
                            progress(q);
                        }
                    }
                });
            }
        });
        progress(n);
        let (entry, max_level) = *building.top.lock().unwrap_or_else(|p| p.into_inner());
        graph.entry = entry;
        graph.max_level = max_level;
        graph.reconnect();
        Ok(graph)
    }

    /// Points of layer 0 that no search can reach from the entry, as a mask (`true`: reached).
    fn reached_from_entry(&self) -> Vec<bool> {
        let mut reached = vec![false; self.len()];
        self.reach(self.entry, &mut reached, &mut Vec::new());
        reached
    }

    /// Marks every point reachable on layer 0 from `from` (itself included) in `reached`.
    fn reach(&self, from: u32, reached: &mut [bool], buf: &mut Vec<u32>) {
        if std::mem::replace(&mut reached[from as usize], true) {
            return;
        }
        let mut stack = vec![from];
        while let Some(id) = stack.pop() {
            self.read_links(id, 0, None, buf);
            for &next in buf.iter() {
                if !std::mem::replace(&mut reached[next as usize], true) {
                    stack.push(next);
                }
            }
        }
    }

    /// Links back every point that no search could return. The heuristic may prune the last
    /// link to a point while the workers' inserts interleave (a few points in some builds of
    /// 20,000, none in most), and a gallery item no search reaches can never be identified.
    /// Each such point, in index order, is added to the list of the nearest reachable point
    /// with a free slot on layer 0 (a search from the entry with the point as the query finds
    /// them); what it links to becomes reachable with it. Returns the points linked back.
    fn reconnect(&self) -> usize {
        let mut reached = self.reached_from_entry();
        let (mut scratch, mut buf, mut linked) = (Scratch::default(), Vec::new(), 0);
        let ef = self.config.ef_construction;
        for lost in 0..self.len() as u32 {
            if reached[lost as usize] {
                continue;
            }
            let near = self.search(self.point(lost as usize), ef, ef, &mut scratch);
            let host = near.iter().map(|&(id, _)| id as u32).find(|&id| {
                let slots = self.slots(id, 0);
                reached[id as usize] && (slots[0].load(Relaxed) as usize) < self.capacity(0)
            });
            if let Some(host) = host {
                let slots = self.slots(host, 0);
                let count = slots[0].load(Relaxed) as usize;
                slots[count + 1].store(lost, Relaxed);
                slots[0].store(count as u32 + 1, Relaxed);
                self.reach(lost, &mut reached, &mut buf);
                linked += 1;
            }
        }
        linked
    }

    /// An estimate of the bytes a built graph holds per point: the point, its layer-0 list, its
    /// level and upper-list offset, and (while building) its lock; the upper layers add about
    /// 1/M of a layer-0 list.
    pub fn bytes_per_point(dim: usize, max_connections: usize) -> usize {
        dim * 4 + (2 * max_connections + 1) * 4 + 1 + 4 + 8 + (max_connections + 1) * 4 / max_connections
    }

    /// A graph with its levels drawn and every list empty; the first point is the entry.
    pub(crate) fn empty(points: Vec<Line>, dim: usize, config: AnnConfig, levels: Vec<u8>) -> Result<Self> {
        let n = levels.len();
        let m = config.max_connections;
        let mut upper_start = Vec::with_capacity(n);
        let mut total: u64 = 0;
        for &level in &levels {
            upper_start.push(total as u32);
            total += u64::from(level) * (m as u64 + 1);
            if total > u64::from(u32::MAX) {
                return Err(AnnError::invalid(
                    "points",
                    n,
                    "the graph's upper layers outgrow 2³² links; split the gallery into shards",
                ));
            }
        }
        let links0 = (0..n * (2 * m + 1)).map(|_| AtomicU32::new(0)).collect();
        let upper = (0..total).map(|_| AtomicU32::new(0)).collect();
        let max_level = levels.first().copied().unwrap_or(0);
        Ok(Hnsw {
            dim,
            config,
            points,
            levels,
            links0,
            upper,
            upper_start,
            entry: 0,
            max_level,
            visited: VisitedPool::new(n),
        })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn config(&self) -> &AnnConfig {
        &self.config
    }

    /// Changes the candidates kept while searching (ef).
    pub fn set_ef_search(&mut self, ef_search: usize) -> Result<()> {
        AnnConfig { ef_search, ..self.config }.check()?;
        self.config.ef_search = ef_search;
        Ok(())
    }

    /// Row `id` of the points.
    pub fn point(&self, id: usize) -> &[f32] {
        &self.values()[id * self.dim..(id + 1) * self.dim]
    }

    /// Every point's values, row by row (`[n * dim]`).
    pub fn values(&self) -> &[f32] {
        &bytemuck::cast_slice::<Line, f32>(&self.points)[..self.len() * self.dim]
    }

    /// The graph's memory in bytes: points, levels, lists, offsets and the searches' mark arrays.
    pub fn memory_bytes(&self) -> usize {
        self.points.len() * std::mem::size_of::<Line>()
            + self.levels.len()
            + (self.links0.len() + self.upper.len() + self.upper_start.len()) * 4
            + self.visited.bytes()
    }

    /// The `k` nearest points of every query (rows of `queries`, `[q * dim]`), nearest first
    /// (ties by index), with their Euclidean distances; queries in parallel on rayon's threads.
    ///
    /// # Panics
    /// When `queries.len()` is not a multiple of the graph's dimension (callers check shapes).
    pub fn nearest(&self, queries: &[f32], k: usize) -> Vec<Vec<(usize, f32)>> {
        self.nearest_with_ef(queries, k, self.config.ef_search)
    }

    /// [`Hnsw::nearest`] keeping `ef` candidates (raised to `k` when smaller) instead of the
    /// graph's `ef_search`.
    pub fn nearest_with_ef(&self, queries: &[f32], k: usize, ef: usize) -> Vec<Vec<(usize, f32)>> {
        assert!(queries.len().is_multiple_of(self.dim), "queries must be rows of {} values", self.dim);
        queries.par_chunks(self.dim).map_init(Scratch::default, |scratch, q| self.search(q, k, ef, scratch)).collect()
    }

    /// The `k` nearest points of one query, nearest first, with their Euclidean distances.
    pub fn nearest_one(&self, query: &[f32], k: usize, ef: usize) -> Vec<(usize, f32)> {
        self.search(query, k, ef, &mut Scratch::default())
    }

    fn search(&self, query: &[f32], k: usize, ef: usize, scratch: &mut Scratch) -> Vec<(usize, f32)> {
        if k == 0 || self.is_empty() {
            return Vec::new();
        }
        with_distance!(self.dim, d => self.search_with(d, query, k, ef, scratch))
    }

    fn search_with(
        &self,
        d: impl RowDistance,
        query: &[f32],
        k: usize,
        ef: usize,
        scratch: &mut Scratch,
    ) -> Vec<(usize, f32)> {
        let values = self.values();
        let mut here = Scored::new(d.between(query, d.row(values, self.entry as usize)), self.entry);
        for level in (1..=self.max_level).rev() {
            here = self.greedy(d, query, here, level, None, &mut scratch.links);
        }
        let mut visited = self.visited.take();
        self.search_layer(d, query, here, ef.max(k), 0, None, &mut visited, scratch);
        self.visited.give_back(visited);
        // Only the k nearest of the ef found are answered: select them, then sort those alone
        // (sorting all ef = 200 cost a fifth of a query at D = 2).
        let found = &mut scratch.found;
        if found.len() > k {
            found.select_nth_unstable(k - 1);
            found.truncate(k);
        }
        found.sort_unstable();
        found.iter().map(|s| (s.id() as usize, s.dist().sqrt())).collect()
    }

    /// The slots of point `id`'s list on `level` (count first).
    #[inline]
    pub(crate) fn slots(&self, id: u32, level: u8) -> &[AtomicU32] {
        let m = self.config.max_connections;
        if level == 0 {
            let width = 2 * m + 1;
            let start = id as usize * width;
            &self.links0[start..start + width]
        } else {
            let width = m + 1;
            let start = self.upper_start[id as usize] as usize + (level as usize - 1) * width;
            &self.upper[start..start + width]
        }
    }

    /// Copies point `id`'s links on `level` into `buf`, under its lock while building.
    #[inline]
    fn read_links(&self, id: u32, level: u8, locks: Option<&[Mutex<()>]>, buf: &mut Vec<u32>) {
        let _guard = locks.map(|l| l[id as usize].lock().unwrap_or_else(|p| p.into_inner()));
        let slots = self.slots(id, level);
        let count = (slots[0].load(Relaxed) as usize).min(slots.len() - 1);
        buf.clear();
        buf.extend(slots[1..=count].iter().map(|s| s.load(Relaxed)));
    }

    fn write_links(slots: &[AtomicU32], ids: &[u32]) {
        for (slot, &id) in slots[1..].iter().zip(ids) {
            slot.store(id, Relaxed);
        }
        slots[0].store(ids.len() as u32, Relaxed);
    }

    /// Moves to the nearest neighbour until none is nearer (ef = 1 on an upper layer).
    fn greedy(
        &self,
        d: impl RowDistance,
        query: &[f32],
        mut here: Scored,
        level: u8,
        locks: Option<&[Mutex<()>]>,
        buf: &mut Vec<u32>,
    ) -> Scored {
        let values = self.values();
        loop {
            let mut moved = false;
            self.read_links(here.id(), level, locks, buf);
            for &next in buf.iter() {
                let dist = d.between(query, d.row(values, next as usize));
                if dist < here.dist() {
                    here = Scored::new(dist, next);
                    moved = true;
                }
            }
            if !moved {
                return here;
            }
        }
    }

    /// Algorithm 2 of Malkov & Yashunin: the `ef` nearest points to `query` on `level` reached
    /// from `entry`, in no particular order, into `scratch.found`.
    #[allow(clippy::too_many_arguments)]
    fn search_layer(
        &self,
        d: impl RowDistance,
        query: &[f32],
        entry: Scored,
        ef: usize,
        level: u8,
        locks: Option<&[Mutex<()>]>,
        visited: &mut Visited,
        scratch: &mut Scratch,
    ) {
        let Scratch { candidates, nearest, links, scores, found } = scratch;
        let values = self.values();
        candidates.clear();
        nearest.clear();
        visited.insert(entry.id());
        candidates.push(Reverse(entry));
        nearest.push(entry);
        let mut bound = entry.dist();
        let mut nearest_full = nearest.len() >= ef;
        while let Some(Reverse(closest)) = candidates.pop() {
            if closest.dist() > bound && nearest_full {
                break;
            }
            self.read_links(closest.id(), level, locks, links);
            // Marks first, then distances: the points' loads are independent of each other, so
            // the processor fetches them together instead of one branch at a time.
            links.retain(|&next| visited.insert(next));
            d.prefetch(values, links);
            scores.clear();
            scores.extend(links.iter().map(|&next| d.between(query, d.row(values, next as usize))));
            for (&next, &dist) in links.iter().zip(scores.iter()) {
                if !nearest_full || dist < bound {
                    let scored = Scored::new(dist, next);
                    candidates.push(Reverse(scored));
                    // A full list swaps its farthest for the newcomer: one sift, not a push's
                    // and a pop's.
                    if nearest_full {
                        if let Some(mut farthest) = nearest.peek_mut() {
                            *farthest = scored;
                        }
                    } else {
                        nearest.push(scored);
                        nearest_full = nearest.len() >= ef;
                    }
                    bound = nearest.peek().map_or(dist, |s| s.dist());
                }
            }
        }
        found.clear();
        found.extend(nearest.drain());
    }

    /// Algorithm 4 of Malkov & Yashunin (without extending or keeping pruned candidates): walks
    /// the candidates nearest first and keeps one only when it is nearer to the base point than
    /// to every point kept so far, up to `max` points.
    fn select(&self, d: impl RowDistance, sorted: &[Scored], max: usize) -> Vec<u32> {
        let values = self.values();
        let mut kept: Vec<u32> = Vec::with_capacity(max);
        for cand in sorted {
            if kept.len() >= max {
                break;
            }
            let p = d.row(values, cand.id() as usize);
            if kept.iter().all(|&r| d.between(p, d.row(values, r as usize)) >= cand.dist()) {
                kept.push(cand.id());
            }
        }
        kept
    }

    /// Algorithm 1 of Malkov & Yashunin for point `q`.
    fn insert(&self, q: u32, building: &Building, scratch: &mut Scratch) {
        with_distance!(self.dim, d => self.insert_with(d, q, building, scratch))
    }

    fn insert_with(&self, d: impl RowDistance, q: u32, building: &Building, scratch: &mut Scratch) {
        let locks = Some(building.locks.as_slice());
        let level = self.levels[q as usize];
        let top = building.top.lock().unwrap_or_else(|p| p.into_inner());
        let (entry, max_level) = *top;
        // A point above the top layer becomes the entry: inserts wait until it is linked.
        let mut top = (level > max_level).then_some(top);
        let query = self.point(q as usize);
        let mut here = Scored::new(d.between(query, self.point(entry as usize)), entry);
        for l in (level + 1..=max_level).rev() {
            here = self.greedy(d, query, here, l, locks, &mut scratch.links);
        }
        for l in (0..=level.min(max_level)).rev() {
            let mut visited = self.visited.take();
            self.search_layer(d, query, here, self.config.ef_construction, l, locks, &mut visited, scratch);
            self.visited.give_back(visited);
            scratch.found.sort_unstable();
            let chosen = self.select(d, &scratch.found, self.config.max_connections);
            self.set_links(d, q, l, &chosen, &building.locks, &mut scratch.links);
            for &neighbour in &chosen {
                self.link(d, neighbour, q, l, &building.locks, &mut scratch.links);
            }
            here = scratch.found[0];
        }
        if let Some(top) = top.as_mut() {
            **top = (q, level);
        }
    }

    fn capacity(&self, level: u8) -> usize {
        if level == 0 {
            2 * self.config.max_connections
        } else {
            self.config.max_connections
        }
    }

    /// Sets `q`'s list on `level` to `chosen`, keeping links other inserts added meanwhile
    /// (pruned by the heuristic if they no longer fit).
    fn set_links(
        &self,
        d: impl RowDistance,
        q: u32,
        level: u8,
        chosen: &[u32],
        locks: &[Mutex<()>],
        buf: &mut Vec<u32>,
    ) {
        let _guard = locks[q as usize].lock().unwrap_or_else(|p| p.into_inner());
        let slots = self.slots(q, level);
        let count = slots[0].load(Relaxed) as usize;
        if count == 0 {
            Self::write_links(slots, chosen);
            return;
        }
        buf.clear();
        buf.extend(slots[1..=count].iter().map(|s| s.load(Relaxed)));
        for &c in chosen {
            if !buf.contains(&c) {
                buf.push(c);
            }
        }
        self.write_pruned(d, q, level, slots, buf);
    }

    /// Adds `q` to `neighbour`'s list on `level`, pruning it by the heuristic when full.
    fn link(&self, d: impl RowDistance, neighbour: u32, q: u32, level: u8, locks: &[Mutex<()>], buf: &mut Vec<u32>) {
        let _guard = locks[neighbour as usize].lock().unwrap_or_else(|p| p.into_inner());
        let slots = self.slots(neighbour, level);
        let count = slots[0].load(Relaxed) as usize;
        buf.clear();
        buf.extend(slots[1..=count].iter().map(|s| s.load(Relaxed)));
        if buf.contains(&q) {
            return;
        }
        if count < self.capacity(level) {
            slots[count + 1].store(q, Relaxed);
            slots[0].store(count as u32 + 1, Relaxed);
            return;
        }
        buf.push(q);
        self.write_pruned(d, neighbour, level, slots, buf);
    }

    /// Writes `ids` into `base`'s list on `level`, or the heuristic's choice of them when they
    /// exceed the list's capacity.
    fn write_pruned(&self, d: impl RowDistance, base: u32, level: u8, slots: &[AtomicU32], ids: &[u32]) {
        let cap = self.capacity(level);
        if ids.len() <= cap {
            Self::write_links(slots, ids);
            return;
        }
        let p = self.point(base as usize);
        let mut scored: Vec<Scored> =
            ids.iter().map(|&id| Scored::new(d.between(p, self.point(id as usize)), id)).collect();
        scored.sort_unstable();
        let kept = self.select(d, &scored, cap);
        Self::write_links(slots, &kept);
    }
}

/// Each point's top layer, ⌊−ln U · m_L⌋ with m_L = 1 / ln M (Malkov & Yashunin, Section 4.1).
fn draw_levels(n: usize, m: usize) -> Vec<u8> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(LEVEL_SEED);
    let scale = 1.0 / (m as f64).ln();
    (0..n)
        .map(|_| {
            let u = 1.0 - rng.random::<f64>();
            ((-u.ln() * scale).floor() as u64).min(u64::from(MAX_LEVEL)) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{exact_nearest, recall_at};
    use rand_distr::{Distribution, StandardNormal};

    fn normal(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| StandardNormal.sample(&mut rng)).collect()
    }

    #[test]
    fn finds_the_exact_neighbours_of_random_points() {
        for dim in [2usize, 16] {
            let points = normal(5000 * dim, 1);
            let queries = normal(200 * dim, 2);
            let index = Hnsw::build(&points, dim, &AnnConfig::default()).unwrap();
            assert_eq!(index.len(), 5000);
            let found = index.nearest(&queries, 10);
            let approx: Vec<Vec<usize>> = found.iter().map(|r| r.iter().map(|&(i, _)| i).collect()).collect();
            let exact = exact_nearest(&points, dim, &queries, 10);
            // The brute-force reference by hand for the first query.
            let q = &queries[..dim];
            let mut by_hand: Vec<(f32, usize)> = points
                .chunks(dim)
                .enumerate()
                .map(|(i, p)| (p.iter().zip(q).map(|(a, b)| (a - b) * (a - b)).sum(), i))
                .collect();
            by_hand.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert_eq!(exact[0], by_hand[..10].iter().map(|&(_, i)| i).collect::<Vec<_>>());
            let recall = recall_at(&approx, &exact, 10);
            assert!(recall >= 0.99, "D = {dim}: recall@10 {recall}");
            // Distances are Euclidean and ascending.
            let (first, d) = found[0][0];
            assert!((d - by_hand.iter().find(|x| x.1 == first).unwrap().0.sqrt()).abs() < 1e-5);
            assert!(found.iter().all(|r| r.windows(2).all(|w| w[0].1 <= w[1].1)));
        }
    }

    #[test]
    fn every_list_respects_its_capacity_and_the_levels_follow_the_geometric_law() {
        let m = 8;
        let points = normal(20_000 * 4, 3);
        let index = Hnsw::build(&points, 4, &AnnConfig::default().with_max_connections(m)).unwrap();
        for id in 0..index.len() as u32 {
            for level in 0..=index.levels[id as usize] {
                let slots = index.slots(id, level);
                let count = slots[0].load(Relaxed) as usize;
                assert!(count <= index.capacity(level));
                assert!(slots[1..=count]
                    .iter()
                    .all(|s| (s.load(Relaxed) as usize) < index.len() && s.load(Relaxed) != id));
            }
        }
        // P(level ≥ 1) = 1/M; 20,000 draws put the share within 0.005 of 1/8 (4.7 sd).
        let above = index.levels.iter().filter(|&&l| l >= 1).count() as f64 / index.len() as f64;
        assert!((above - 1.0 / m as f64).abs() < 0.012, "{above}");
        assert_eq!(index.levels[index.entry as usize], index.max_level);
        assert_eq!(index.max_level, *index.levels.iter().max().unwrap());
        // Every point is reachable from the entry on layer 0, however the workers' inserts
        // interleaved: the heuristic may cut the last link to a point (over 56 builds on a busy
        // machine before the graph was reconnected: none in 41, one in 13, eight in 2), and the
        // build links such points back.
        assert!(index.reached_from_entry().iter().all(|&r| r), "a point no search reaches");
    }

    /// A point whose every in-link is cut is linked back by the nearest reachable point with
    /// room, and searches find it again; nothing else changes.
    #[test]
    fn a_point_no_search_reaches_is_linked_back() {
        let points = normal(2_000 * 3, 11);
        let index = Hnsw::build(&points, 3, &AnnConfig::default().with_max_connections(8)).unwrap();
        let lost = 1_234u32;
        let mut buf = Vec::new();
        for id in 0..index.len() as u32 {
            index.read_links(id, 0, None, &mut buf);
            if buf.contains(&lost) {
                buf.retain(|&x| x != lost);
                Hnsw::write_links(index.slots(id, 0), &buf);
            }
        }
        assert!(!index.reached_from_entry()[lost as usize]);
        let query = index.point(lost as usize).to_vec();
        assert_ne!(index.nearest_one(&query, 1, 64)[0].0, lost as usize, "a cut point cannot be found");
        assert_eq!(index.reconnect(), 1);
        assert!(index.reached_from_entry().iter().all(|&r| r));
        assert_eq!(index.nearest_one(&query, 1, 64)[0], (lost as usize, 0.0));
        assert_eq!(index.reconnect(), 0, "a connected graph is left as it is");
    }

    #[test]
    fn a_packed_score_orders_as_its_distance_then_its_point() {
        // Squared distances: zero, subnormal, ordinary and huge values, infinity, and ties.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut dists = vec![0.0f32, f32::MIN_POSITIVE / 4.0, 1e-30, 1.0, 1.0, 3e38, f32::INFINITY];
        dists.extend((0..500).map(|_| rng.random::<f32>() * 10f32.powi(rng.random_range(-8..8))));
        let pairs: Vec<(f32, u32)> = dists.iter().map(|&d| (d, rng.random_range(0..4u32))).collect();
        for &(da, ia) in &pairs {
            let a = Scored::new(da, ia);
            assert_eq!((a.dist().to_bits(), a.id()), (da.to_bits(), ia));
            for &(db, ib) in &pairs {
                let reference = da.total_cmp(&db).then(ia.cmp(&ib));
                assert_eq!(a.cmp(&Scored::new(db, ib)), reference, "({da}, {ia}) against ({db}, {ib})");
            }
        }
    }

    #[test]
    fn small_and_broken_inputs() {
        let one = Hnsw::build(&[1.0, 2.0], 2, &AnnConfig::default()).unwrap();
        assert_eq!(one.nearest(&[0.0, 0.0], 5), vec![vec![(0, 5f32.sqrt())]]);
        assert!(one.nearest_one(&[0.0, 0.0], 0, 10).is_empty());
        assert!(Hnsw::build(&[f32::NAN, 0.0], 2, &AnnConfig::default()).is_err());
        assert!(Hnsw::build(&[1.0, 2.0, 3.0], 2, &AnnConfig::default()).is_err());
        assert!(Hnsw::build(&[], 2, &AnnConfig::default()).is_err());
        assert!(AnnConfig::default().with_max_connections(1).check().is_err());
        assert!(AnnConfig::default().with_ef_construction(4).check().is_err());
    }
}
