use super::*;

fn target(partition: i32, fetch_offset: i64) -> FetchTarget {
    FetchTarget {
        topic: TopicKey::Name(StrBytes::from_static_str("t")),
        partition,
        fetch_offset,
        partition_max_bytes: 1 << 20,
        current_leader_epoch: -1,
    }
}

fn reported(high_watermark: i64) -> Reported {
    Reported {
        high_watermark,
        log_start_offset: 0,
    }
}

fn consumer(session_id: i32, epoch: i32) -> SessionRequest {
    SessionRequest {
        session_id,
        epoch,
        uses_topic_ids: false,
        privileged: false,
    }
}

fn quiet(high_watermark: i64) -> PartitionOutcome {
    PartitionOutcome {
        has_records: false,
        error: false,
        reported: reported(high_watermark),
    }
}

/// A session over partitions 0..count, every one reported at high watermark 10.
fn session(cache: &FetchSessionCache, count: i32, now_ms: i64) -> i32 {
    let partitions = (0..count).map(|p| (target(p, 0), reported(10))).collect();
    cache.create(consumer(NO_SESSION, INITIAL_EPOCH), partitions, now_ms)
}

#[test]
fn epochs_advance_by_one_and_a_wrong_one_leaves_the_session_as_it_was() {
    let cache = FetchSessionCache::new(10);
    let id = session(&cache, 2, 0);
    assert_ne!(id, NO_SESSION);
    let read = cache
        .update(consumer(id, 1), vec![], &[], 0)
        .unwrap()
        .unwrap();
    assert_eq!(
        (read.session_id, read.epoch, read.targets.len()),
        (id, 1, 2)
    );
    assert_eq!(
        cache.update(consumer(id, 1), vec![], &[], 0).unwrap_err(),
        SessionError::InvalidEpoch {
            session_id: id,
            expected: 2,
            requested: 1
        }
    );
    assert_eq!(
        cache
            .update(consumer(id, 2), vec![], &[], 0)
            .unwrap()
            .unwrap()
            .epoch,
        2
    );
    assert_eq!(
        cache
            .update(consumer(id + 1, 1), vec![], &[], 0)
            .unwrap_err(),
        SessionError::NotFound(id + 1)
    );
    let by_id = SessionRequest {
        uses_topic_ids: true,
        ..consumer(id, 3)
    };
    assert_eq!(
        cache.update(by_id, vec![], &[], 0).unwrap_err(),
        SessionError::TopicIdMismatch(id)
    );
    assert_eq!(next_epoch(i32::MAX), 1);
}

#[test]
fn an_incremental_request_updates_adds_and_forgets_partitions() {
    let cache = FetchSessionCache::new(10);
    let id = session(&cache, 2, 0);
    let changed = vec![target(0, 10), target(5, 3)];
    let read = cache
        .update(consumer(id, 1), changed, &[(target(1, 0).topic, 1)], 0)
        .unwrap()
        .unwrap();
    assert_eq!(
        read.targets,
        vec![
            (target(0, 10), reported(10)),
            (target(5, 3), Reported::NONE)
        ]
    );
    // Forgetting the rest closes the session.
    let forget_all = [(target(0, 0).topic, 0), (target(0, 0).topic, 5)];
    assert!(cache
        .update(consumer(id, 2), vec![], &forget_all, 0)
        .unwrap()
        .is_none());
    assert_eq!(cache.stats().sessions, 0);
}

#[test]
fn only_partitions_with_news_are_answered_and_they_move_to_the_end() {
    let cache = FetchSessionCache::new(10);
    let id = session(&cache, 4, 0);
    let read = cache
        .update(consumer(id, 1), vec![], &[], 0)
        .unwrap()
        .unwrap();
    let records = PartitionOutcome {
        has_records: true,
        ..quiet(10)
    };
    let error = PartitionOutcome {
        error: true,
        ..quiet(10)
    };
    let moved_log_start = PartitionOutcome {
        reported: Reported {
            high_watermark: 10,
            log_start_offset: 4,
        },
        ..quiet(10)
    };
    let included = cache.answered(&read, &[records, quiet(10), error, moved_log_start]);
    assert_eq!(included, vec![true, false, true, true]);
    let read = cache
        .update(consumer(id, 2), vec![], &[], 0)
        .unwrap()
        .unwrap();
    let order: Vec<i32> = read.targets.iter().map(|(t, _)| t.partition).collect();
    assert_eq!(order, vec![1, 0, 2, 3]);
    // The errored partition's high watermark was forgotten: it is answered again once healthy.
    assert_eq!(read.targets[2].1.high_watermark, -1);
    let included = cache.answered(&read, &[quiet(10), quiet(10), quiet(10), moved_log_start]);
    assert_eq!(included, vec![false, false, true, false]);
    // A moved high watermark is news.
    let read = cache
        .update(consumer(id, 3), vec![], &[], 0)
        .unwrap()
        .unwrap();
    let included = cache.answered(&read, &[quiet(11), quiet(10), moved_log_start, quiet(10)]);
    assert_eq!(included, vec![true, false, false, false]);
}

#[test]
fn an_answer_overtaken_by_a_later_request_does_not_touch_the_session() {
    let cache = FetchSessionCache::new(10);
    let id = session(&cache, 1, 0);
    let first = cache
        .update(consumer(id, 1), vec![], &[], 0)
        .unwrap()
        .unwrap();
    let _second = cache
        .update(consumer(id, 2), vec![], &[], 0)
        .unwrap()
        .unwrap();
    assert_eq!(cache.answered(&first, &[quiet(12)]), vec![true]);
    let third = cache
        .update(consumer(id, 3), vec![], &[], 0)
        .unwrap()
        .unwrap();
    assert_eq!(third.targets[0].1, reported(10));
}

#[test]
fn a_full_cache_evicts_as_kafka_does() {
    let cache = FetchSessionCache::new(2);
    let small = session(&cache, 1, 0);
    let large = session(&cache, 5, 1_000);
    // Young sessions: an unprivileged fetch of any size finds no room.
    assert_eq!(session(&cache, 9, 2_000), NO_SESSION);
    // A follower may take a young consumer session's slot: the smallest goes.
    let follower = SessionRequest {
        privileged: true,
        ..consumer(NO_SESSION, INITIAL_EPOCH)
    };
    let followed = cache.create(follower, vec![(target(0, 0), reported(1))], 2_000);
    assert_ne!(followed, NO_SESSION);
    assert!(cache
        .update(consumer(small, 1), vec![], &[], 2_000)
        .is_err());
    assert_eq!(cache.stats().evictions, 1);
    // Old enough, the 5-partition session may be taken by a larger one but not a smaller one.
    let later = 1_000 + EVICTION_MS + 1;
    cache
        .update(consumer(large, 1), vec![], &[], later)
        .unwrap();
    cache
        .update(
            SessionRequest {
                session_id: followed,
                epoch: 1,
                ..follower
            },
            vec![],
            &[],
            later,
        )
        .unwrap();
    assert_eq!(session(&cache, 3, later), NO_SESSION);
    assert_ne!(session(&cache, 6, later), NO_SESSION);
    assert_eq!(cache.stats().sessions, 2);
    // Unused for longer than EVICTION_MS: any fetch may take its slot.
    let much_later = later + EVICTION_MS + 1;
    assert_ne!(session(&cache, 1, much_later), NO_SESSION);
    assert_eq!(cache.stats().evictions, 3);
}

#[test]
fn no_session_without_partitions_or_slots() {
    assert_eq!(session(&FetchSessionCache::new(0), 3, 0), NO_SESSION);
    let cache = FetchSessionCache::new(3);
    assert_eq!(session(&cache, 0, 0), NO_SESSION);
    let id = session(&cache, 2, 0);
    cache.remove(id);
    assert_eq!(cache.stats(), CacheStats::default());
}

#[test]
fn sessions_together_hold_a_bounded_number_of_partitions() {
    let cache = FetchSessionCache::new(10);
    let too_many = MAX_CACHED_PARTITIONS as i32 + 1;
    assert_eq!(session(&cache, too_many, 0), NO_SESSION);
    let id = session(&cache, MAX_CACHED_PARTITIONS as i32 - 1, 0);
    assert_ne!(id, NO_SESSION);
    assert_eq!(session(&cache, 2, 0), NO_SESSION);
    // Growing past the bound ends the session; the client starts over with a full fetch.
    let grown = vec![target(-1, 0), target(-2, 0)];
    assert_eq!(
        cache.update(consumer(id, 1), grown, &[], 0).unwrap_err(),
        SessionError::NotFound(id)
    );
    assert_eq!(cache.stats(), CacheStats::default());
    assert_ne!(session(&cache, 2, 0), NO_SESSION);
}
