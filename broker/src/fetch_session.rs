//! Incremental fetch sessions (KIP-227), as Kafka's `FetchSessionCache` keeps them.
//!
//! A consumer that fetches the same partitions over and over need not list them every time: its
//! first *full* fetch (`session_epoch` 0) creates a session holding every partition's fetch
//! position, and the answer carries the session's id. Later *incremental* fetches (epochs 1, 2,
//! …) name only the partitions whose position changed, plus `forgotten_topics_data`; the answer
//! holds only the partitions with something new — records, a moved high watermark or log start
//! offset, an error. Epoch -1 with a session id closes the session.
//!
//! - The cache is a bounded map (`max.incremental.fetch.session.cache.slots`, Kafka's 1000). A
//!   full cache makes room as Kafka's does: a session idle for [`EVICTION_MS`] goes first;
//!   else a follower's (privileged) fetch may take an unprivileged session's slot, and a fetch
//!   may take the slot of a session with fewer partitions that has existed for [`EVICTION_MS`].
//!   Without room the fetch is answered sessionless (session id 0), which clients accept.
//! - All sessions together hold at most [`MAX_CACHED_PARTITIONS`] partitions (Kafka bounds
//!   only the slots, so a few requests naming millions of partitions could fill its heap): a
//!   full fetch past it gets no session, an incremental one that would grow past it ends its
//!   session (FETCH_SESSION_ID_NOT_FOUND), and the client goes back to a full fetch.
//! - Errors are Kafka's: an unknown session id is FETCH_SESSION_ID_NOT_FOUND, an epoch other
//!   than the session's next one INVALID_FETCH_SESSION_EPOCH (the session stays), and a
//!   session created with topic ids (v13+) used by a v12- request, or the reverse,
//!   FETCH_SESSION_TOPIC_ID_ERROR.
//! - Partitions that answered move to the end of the session's order, so a response's byte
//!   limit does not starve the later partitions (Kafka rotates them the same way).
//! - Time comes from the caller (`now_ms`), so tests drive eviction by hand.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

/// `session_epoch` of a full fetch that creates a session.
pub const INITIAL_EPOCH: i32 = 0;
/// `session_epoch` of a fetch that closes its session or wants none.
pub const FINAL_EPOCH: i32 = -1;
/// `session_id` meaning "no session".
pub const NO_SESSION: i32 = 0;
/// A session unused this long may be evicted by any new one (Kafka's 120 s).
pub const EVICTION_MS: i64 = 120_000;
/// Partitions all sessions together may hold (about 100 bytes each).
pub const MAX_CACHED_PARTITIONS: usize = 200_000;

/// How a request names a partition's topic: by id from v13, by name before.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TopicKey {
    Id(Uuid),
    Name(StrBytes),
}

/// One partition to read, and from where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchTarget {
    pub topic: TopicKey,
    pub partition: i32,
    pub fetch_offset: i64,
    pub partition_max_bytes: i32,
    pub current_leader_epoch: i32,
}

/// What the last answer told the client about a partition: an incremental answer includes the
/// partition again only when this changed or there are records or an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reported {
    pub high_watermark: i64,
    pub log_start_offset: i64,
}

impl Reported {
    /// Never reported (a partition just added): the next answer includes it.
    pub const NONE: Reported = Reported {
        high_watermark: -1,
        log_start_offset: -1,
    };
}

/// One partition of a read, as the session compares it with what it reported before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionOutcome {
    pub has_records: bool,
    pub error: bool,
    pub reported: Reported,
}

impl PartitionOutcome {
    /// Kafka's `CachedPartition.maybeUpdateResponseData`: records, an error, or a moved high
    /// watermark or log start offset must be answered.
    fn must_answer(&self, before: Reported) -> bool {
        self.has_records || self.error || self.reported != before
    }

    /// What the client knows after this answer (an error forgets the high watermark, so the
    /// partition is answered again once the error clears).
    pub fn remembered(&self) -> Reported {
        match self.error {
            true => Reported {
                high_watermark: -1,
                ..self.reported
            },
            false => self.reported,
        }
    }
}

/// Why an incremental fetch cannot use the session it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("no fetch session {0}")]
    NotFound(i32),
    #[error("fetch session {session_id} expects epoch {expected}, the request has {requested}")]
    InvalidEpoch {
        session_id: i32,
        expected: i32,
        requested: i32,
    },
    #[error("fetch session {0} was created with the other way of naming topics (ids from v13)")]
    TopicIdMismatch(i32),
}

/// What one incremental fetch reads: the session's partitions in its order, each with what the
/// client was last told.
#[derive(Debug)]
pub struct IncrementalRead {
    pub session_id: i32,
    /// The epoch this request used; the answer is applied only if no later request came.
    pub epoch: i32,
    pub targets: Vec<(FetchTarget, Reported)>,
}

/// A request's fetch-session fields.
#[derive(Debug, Clone, Copy)]
pub struct SessionRequest {
    pub session_id: i32,
    pub epoch: i32,
    pub uses_topic_ids: bool,
    /// A follower's fetch (Kafka's privileged sessions).
    pub privileged: bool,
}

struct Session {
    /// The epoch the next incremental request must carry.
    next_epoch: i32,
    uses_topic_ids: bool,
    privileged: bool,
    partitions: Vec<(FetchTarget, Reported)>,
    created_ms: i64,
    last_used_ms: i64,
}

/// Sizes for the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub sessions: usize,
    pub partitions: usize,
    pub evictions: u64,
}

/// The broker's fetch sessions.
pub struct FetchSessionCache {
    max_sessions: usize,
    state: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    sessions: HashMap<i32, Session>,
    /// The sum of the sessions' partition counts.
    cached_partitions: usize,
    evictions: u64,
}

/// The epoch after `epoch` (it wraps to 1, never to 0 or below).
fn next_epoch(epoch: i32) -> i32 {
    match epoch {
        i32::MAX => 1,
        epoch => epoch + 1,
    }
}

impl FetchSessionCache {
    pub fn new(max_sessions: usize) -> Self {
        FetchSessionCache {
            max_sessions,
            state: Mutex::new(CacheState::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn stats(&self) -> CacheStats {
        let state = self.lock();
        CacheStats {
            sessions: state.sessions.len(),
            partitions: state.cached_partitions,
            evictions: state.evictions,
        }
    }

    /// Drops session `session_id` (a full fetch names the session it replaces or closes).
    /// Drops session `session_id`; true if there was one.
    pub fn remove(&self, session_id: i32) -> bool {
        session_id != NO_SESSION && self.lock().remove(session_id)
    }

    /// After a full fetch answered `partitions` (in order, with what was reported): a new
    /// session for them, or [`NO_SESSION`] when there are none or the cache has no room.
    pub fn create(
        &self,
        request: SessionRequest,
        partitions: Vec<(FetchTarget, Reported)>,
        now_ms: i64,
    ) -> i32 {
        if partitions.is_empty() || self.max_sessions == 0 {
            return NO_SESSION;
        }
        let mut state = self.lock();
        if state.cached_partitions + partitions.len() > MAX_CACHED_PARTITIONS {
            return NO_SESSION;
        }
        if state.sessions.len() >= self.max_sessions
            && !state.evict_for(request.privileged, partitions.len(), now_ms)
        {
            return NO_SESSION;
        }
        let session_id = loop {
            let candidate = (Uuid::new_v4().as_u128() as u32 & 0x7fff_ffff) as i32;
            if candidate != NO_SESSION && !state.sessions.contains_key(&candidate) {
                break candidate;
            }
        };
        state.cached_partitions += partitions.len();
        state.sessions.insert(
            session_id,
            Session {
                next_epoch: next_epoch(INITIAL_EPOCH),
                uses_topic_ids: request.uses_topic_ids,
                privileged: request.privileged,
                partitions,
                created_ms: now_ms,
                last_used_ms: now_ms,
            },
        );
        session_id
    }

    /// An incremental fetch: checks the session and epoch, applies the request's changed and
    /// forgotten partitions, and moves the session to its next epoch. `Ok(None)` when no
    /// partition is left (the session is then closed and the fetch answered sessionless).
    pub fn update(
        &self,
        request: SessionRequest,
        changed: Vec<FetchTarget>,
        forgotten: &[(TopicKey, i32)],
        now_ms: i64,
    ) -> Result<Option<IncrementalRead>, SessionError> {
        let mut state = self.lock();
        let session_id = request.session_id;
        let session = state
            .sessions
            .get_mut(&session_id)
            .ok_or(SessionError::NotFound(session_id))?;
        if session.next_epoch != request.epoch {
            return Err(SessionError::InvalidEpoch {
                session_id,
                expected: session.next_epoch,
                requested: request.epoch,
            });
        }
        if session.uses_topic_ids != request.uses_topic_ids {
            return Err(SessionError::TopicIdMismatch(session_id));
        }
        let before = session.partitions.len();
        let mut positions: HashMap<(TopicKey, i32), usize> = session
            .partitions
            .iter()
            .enumerate()
            .map(|(index, (cached, _))| ((cached.topic.clone(), cached.partition), index))
            .collect();
        for target in changed {
            let key = (target.topic.clone(), target.partition);
            match positions.get(&key) {
                Some(index) => session.partitions[*index].0 = target,
                None => {
                    positions.insert(key, session.partitions.len());
                    session.partitions.push((target, Reported::NONE));
                }
            }
        }
        if !forgotten.is_empty() {
            let forgotten: HashSet<&(TopicKey, i32)> = forgotten.iter().collect();
            session.partitions.retain(|(cached, _)| {
                !forgotten.contains(&(cached.topic.clone(), cached.partition))
            });
        }
        let after = session.partitions.len();
        state.cached_partitions = state.cached_partitions - before + after;
        if after == 0 {
            state.remove(session_id);
            return Ok(None);
        }
        if state.cached_partitions > MAX_CACHED_PARTITIONS {
            state.remove(session_id);
            return Err(SessionError::NotFound(session_id));
        }
        let session = state.sessions.get_mut(&session_id).expect("checked above");
        let epoch = session.next_epoch;
        session.next_epoch = next_epoch(epoch);
        session.last_used_ms = now_ms;
        Ok(Some(IncrementalRead {
            session_id,
            epoch,
            targets: session.partitions.clone(),
        }))
    }

    /// After an incremental fetch was answered: which of its partitions the answer includes
    /// (`outcomes` in the read's order), remembering what they reported and moving them to the
    /// end of the session's order.
    pub fn answered(&self, read: &IncrementalRead, outcomes: &[PartitionOutcome]) -> Vec<bool> {
        let included: Vec<bool> = read
            .targets
            .iter()
            .zip(outcomes)
            .map(|((_, before), outcome)| outcome.must_answer(*before))
            .collect();
        let mut state = self.lock();
        let Some(session) = state.sessions.get_mut(&read.session_id) else {
            return included;
        };
        // A later request already moved the session on: it owns the positions now. Otherwise
        // nothing changed the session since the read, which holds its partitions in order.
        if session.next_epoch != next_epoch(read.epoch)
            || session.partitions.len() != read.targets.len()
        {
            return included;
        }
        let mut quiet = Vec::with_capacity(session.partitions.len());
        let mut answered = Vec::new();
        let cached = std::mem::take(&mut session.partitions);
        for (((target, before), outcome), include) in
            cached.into_iter().zip(outcomes).zip(&included)
        {
            match include {
                true => answered.push((target, outcome.remembered())),
                false => quiet.push((target, before)),
            }
        }
        quiet.extend(answered);
        session.partitions = quiet;
        included
    }
}

impl CacheState {
    fn remove(&mut self, session_id: i32) -> bool {
        match self.sessions.remove(&session_id) {
            Some(session) => {
                self.cached_partitions -= session.partitions.len();
                true
            }
            None => false,
        }
    }

    /// Makes room for a session of `size` partitions (Kafka's `tryEvict`). True if one went.
    fn evict_for(&mut self, privileged: bool, size: usize, now_ms: i64) -> bool {
        let stalest = self
            .sessions
            .iter()
            .min_by_key(|(id, session)| (session.last_used_ms, **id))
            .map(|(id, session)| (*id, session.last_used_ms));
        let victim = match stalest {
            Some((id, last_used_ms)) if now_ms - last_used_ms > EVICTION_MS => Some(id),
            _ => self
                .sessions
                .iter()
                .filter(|(_, session)| {
                    let old = now_ms - session.created_ms > EVICTION_MS;
                    // Kafka: any fetch may evict an old session; a privileged one also a
                    // young unprivileged one.
                    old || (privileged && !session.privileged)
                })
                .min_by_key(|(id, session)| (session.privileged, session.partitions.len(), **id))
                .filter(|(_, session)| {
                    (privileged, size) > (session.privileged, session.partitions.len())
                })
                .map(|(id, _)| *id),
        };
        match victim {
            Some(id) => {
                self.remove(id);
                self.evictions += 1;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests;
