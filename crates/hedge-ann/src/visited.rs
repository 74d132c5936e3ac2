//! Which points a search has reached: one mark per point, reset by bumping a generation
//! instead of clearing (a search touches a few thousand of millions of points).

use std::sync::Mutex;

pub(crate) struct Visited {
    generation: u16,
    marks: Vec<u16>,
}

impl Visited {
    fn new(len: usize) -> Self {
        Visited { generation: 0, marks: vec![0; len] }
    }

    /// Forgets every mark.
    fn reset(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.marks.fill(0);
            self.generation = 1;
        }
    }

    /// Marks `id`; true when it was not marked yet.
    #[inline]
    pub(crate) fn insert(&mut self, id: u32) -> bool {
        let mark = &mut self.marks[id as usize];
        if *mark == self.generation {
            false
        } else {
            *mark = self.generation;
            true
        }
    }
}

/// Mark arrays reused across searches (one per concurrent search).
pub(crate) struct VisitedPool {
    len: usize,
    free: Mutex<Vec<Visited>>,
}

impl VisitedPool {
    pub(crate) fn new(len: usize) -> Self {
        VisitedPool { len, free: Mutex::new(Vec::new()) }
    }

    /// A cleared mark array; give it back with [`VisitedPool::give_back`].
    pub(crate) fn take(&self) -> Visited {
        let reused = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut visited = reused.unwrap_or_else(|| Visited::new(self.len));
        visited.reset();
        visited
    }

    pub(crate) fn give_back(&self, visited: Visited) {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(visited);
    }

    /// Bytes held by the mark arrays now.
    pub(crate) fn bytes(&self) -> usize {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).len() * self.len * 2
    }
}
