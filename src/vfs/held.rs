//! Room reserved against the quota for one operation in flight.

use super::*;

/// Room reserved against the quota for one operation in flight. It is given back when the
/// operation records what it stored ([`Held::land`]) or when dropped (the operation failed
/// or was cancelled), so a reservation can never leak.
pub(super) struct Held {
    pub(super) vfs: Vfs,
    pub(super) bytes: u64,
    pub(super) objects: u64,
}

impl Held {
    /// Nothing reserved yet.
    pub(super) fn none(vfs: &Vfs) -> Held {
        Held {
            vfs: vfs.clone(),
            bytes: 0,
            objects: 0,
        }
    }

    /// Reserves `bytes` and `objects` more for this operation.
    pub(super) fn grow(&mut self, bytes: u64, objects: u64) -> FsResult<()> {
        self.vfs
            .state()
            .reserve(&self.vfs.inner.quota, bytes, objects)?;
        self.bytes += bytes;
        self.objects += objects;
        Ok(())
    }

    /// Reserves `bytes` more without checking the quota: for room the same operation
    /// has just freed (an open file taking over what its unlinked entry counted).
    pub(super) fn force(&mut self, bytes: u64) {
        self.vfs.state().reserved_bytes += bytes;
        self.bytes += bytes;
    }

    /// Records the operation's result in the index and gives the reservation back, in one
    /// step, so usage never counts both or neither.
    pub(super) fn land(mut self, record: impl FnOnce(&mut State)) {
        let mut st = self.vfs.state();
        record(&mut st);
        st.release(self.bytes, self.objects);
        self.bytes = 0;
        self.objects = 0;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.bytes > 0 || self.objects > 0 {
            self.vfs.state().release(self.bytes, self.objects);
        }
    }
}
