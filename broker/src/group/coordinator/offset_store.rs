//! The group coordinator's offset store: checking and applying offset commits (plain and
//! transactional, KIP-447), fetching them, OffsetDelete and the expiry of an empty group's
//! offsets (KIP-211), each written to the group's `__consumer_offsets` partition first.

use super::*;

impl GroupCoordinator {
    /// Checks an offset commit against the group's membership and generation.
    pub fn check_commit(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Option<GroupError> {
        let member = CommitMember {
            member_id,
            group_instance_id,
            generation_id,
        };
        self.lock().check_member(group_id, &member)
    }

    /// Appends offset commits to the group's `__consumer_offsets` partition, then applies them.
    /// Returns what the answer must wait for: an fsync (`flush.on.ack`), and in a cluster the
    /// offsets partition's in-sync replicas (as Kafka writes commits with acks=all).
    pub fn commit(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        commits: Vec<(String, i32, CommittedOffset)>,
    ) -> Result<Option<CommitWait>, BrokerError> {
        if commits.is_empty() {
            return Ok(None);
        }
        let records = commits
            .iter()
            .map(|(topic, partition, offset)| (topic.as_str(), *partition, Some(offset)))
            .collect();
        let (partition, last_offset, flush_on_ack) =
            self.append_offset_records(topics, group_id, records)?;
        let mut state = self.lock();
        let replicated = self.in_cluster();
        let group_offsets = state.offsets.entry(group_id.to_string()).or_default();
        for (topic, index, offset) in commits {
            group_offsets.insert((topic, index), offset);
        }
        Ok((flush_on_ack || replicated).then_some(CommitWait {
            partition,
            last_offset,
            durable: flush_on_ack,
            replicated,
        }))
    }

    /// Appends tombstones deleting the committed offsets of `partitions`.
    pub(super) fn append_tombstones(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<(), BrokerError> {
        let records = partitions
            .iter()
            .map(|(t, p)| (t.as_str(), *p, None))
            .collect();
        self.append_offset_records(topics, group_id, records)
            .map(|_| ())
    }

    /// Appends offset records (a `None` value is a tombstone) to the group's offsets partition.
    /// Returns the partition, the last offset written and whether acks wait for an fsync.
    pub(super) fn append_offset_records(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        entries: Vec<(&str, i32, Option<&CommittedOffset>)>,
    ) -> Result<(Arc<crate::partition::Partition>, i64, bool), BrokerError> {
        let records = entries
            .iter()
            .map(|(topic, partition, offset)| {
                (
                    offsets::encode_key(group_id, topic, *partition),
                    offset.map(offsets::encode_value),
                )
            })
            .collect();
        self.append_records(topics, group_id, records)
    }

    /// Appends (key, value) records (a `None` value is a tombstone) to the group's partition of
    /// `__consumer_offsets`. Returns the partition, the last offset written and whether acks
    /// wait for an fsync.
    pub(super) fn append_records(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        entries: Vec<(Bytes, Option<Bytes>)>,
    ) -> Result<(Arc<crate::partition::Partition>, i64, bool), BrokerError> {
        let (topic, partition) = self.offsets_partition(topics, group_id)?;
        let batch = internal::key_value_batch(entries, None, self.clock.now_ms())?;
        let appended = partition.append(batch)?;
        Ok((partition, appended.last_offset, topic.config.flush_on_ack))
    }

    /// The topic and the `__consumer_offsets` partition of a group.
    /// The index of the group's `__consumer_offsets` partition, whether or not this broker
    /// hosts it (a transaction coordinator adding a group's offsets to a transaction).
    pub fn offsets_partition_index(&self, topics: &TopicRegistry, group_id: &str) -> i32 {
        let partitions = topics
            .get(OFFSETS_TOPIC)
            .map_or(self.offsets_partitions, |t| t.partitions.len() as i32);
        offsets::partition_for(group_id, partitions)
    }

    pub fn offsets_partition(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
    ) -> Result<(Arc<Topic>, Arc<crate::partition::Partition>), BrokerError> {
        let topic = self.offsets_topic(topics)?;
        let index = offsets::partition_for(group_id, topic.partitions.len() as i32);
        let partition = topic.partition(index).cloned().ok_or_else(|| {
            BrokerError::UnknownTopicOrPartition {
                topic: OFFSETS_TOPIC.into(),
                partition: index,
            }
        })?;
        Ok((topic, partition))
    }

    /// TxnOffsetCommit: the offsets are written to the group's partition of
    /// `__consumer_offsets` inside the producer's transaction and stay pending until its marker.
    /// A KIP-447 commit (`member`) is checked against the group's generation and registered as
    /// pending in one step under the coordinator's lock, before it is appended: a rebalance
    /// cannot complete in between, so a new owner's `require_stable` fetch either sees it
    /// pending or never sees it (refused as a zombie's).
    pub fn txn_commit(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        producer: (i64, i16),
        member: Option<&CommitMember<'_>>,
        commits: Vec<(String, i32, CommittedOffset)>,
    ) -> Result<Option<CommitWait>, TxnCommitError> {
        if commits.is_empty() {
            return Ok(None);
        }
        let (topic, partition) = self.offsets_partition(topics, group_id)?;
        let records = commits
            .iter()
            .map(|(topic, index, offset)| {
                (
                    offsets::encode_key(group_id, topic, *index),
                    Some(offsets::encode_value(offset)),
                )
            })
            .collect();
        let batch = internal::key_value_batch(records, Some(producer), self.clock.now_ms())?;
        let replaced = {
            let mut state = self.lock();
            if let Some(refused) = member.and_then(|member| state.check_member(group_id, member)) {
                return Err(TxnCommitError::Group(refused));
            }
            let pending = state
                .pending_txn
                .entry(producer.0)
                .or_default()
                .entry(group_id.to_string())
                .or_default();
            commits
                .into_iter()
                .map(|(topic, index, offset)| {
                    let key = (topic, index);
                    let before = pending.insert(key.clone(), offset);
                    (key, before)
                })
                .collect::<Vec<_>>()
        };
        let appended = match partition.append_from_coordinator(batch) {
            Ok(appended) => appended,
            Err(error) => {
                self.lock()
                    .unregister_pending(producer.0, group_id, replaced);
                return Err(TxnCommitError::Broker(error.into()));
            }
        };
        // As a plain commit: held by the offsets partition's replicas before it is answered,
        // or the transaction could commit without its offsets.
        let durable = topic.config.flush_on_ack;
        let replicated = self.in_cluster();
        Ok((durable || replicated).then_some(CommitWait {
            partition,
            last_offset: appended.last_offset,
            durable,
            replicated,
        }))
    }

    /// The transaction coordinator wrote `producer_id`'s marker to `__consumer_offsets`.
    pub fn complete_txn(&self, producer_id: i64, commit: bool) {
        self.lock().complete_txn(producer_id, commit);
    }

    /// Committed offsets of a group: the requested partitions, or all when `None`. With
    /// `require_stable`, each also says whether an open transaction holds a pending offset for
    /// it (OffsetFetch answers UNSTABLE_OFFSET_COMMIT then, KIP-447) — read under the same lock
    /// as the offset, so that a transaction completing in between cannot make the offset before
    /// it look stable.
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        partitions: Option<Vec<(String, i32)>>,
        require_stable: bool,
    ) -> Vec<FetchedOffset> {
        let state = self.lock();
        let committed = state.offsets.get(group_id);
        let pending = |key: &(String, i32)| {
            require_stable
                && state.pending_txn.values().any(|groups| {
                    groups
                        .get(group_id)
                        .is_some_and(|offsets| offsets.contains_key(key))
                })
        };
        let fetched = |key: (String, i32), offset: Option<CommittedOffset>| FetchedOffset {
            unstable: pending(&key),
            topic: key.0,
            partition: key.1,
            offset,
        };
        match partitions {
            Some(wanted) => wanted
                .into_iter()
                .map(|key| {
                    let offset = committed.and_then(|c| c.get(&key).cloned());
                    fetched(key, offset)
                })
                .collect(),
            None => committed
                .map(|c| {
                    c.iter()
                        .map(|(key, offset)| fetched(key.clone(), Some(offset.clone())))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// Topics a group's members subscribe to, from their consumer-protocol metadata (`None` when
    /// some member's metadata cannot be read: then every topic counts as subscribed).
    fn subscribed_topics(group: &Group) -> Option<Vec<String>> {
        use kafka_protocol::messages::ConsumerProtocolSubscription;
        use kafka_protocol::protocol::Decodable;
        let mut topics = Vec::new();
        for member in group.members.values() {
            for (_, metadata) in &member.protocols {
                let mut bytes = metadata.clone();
                if bytes.len() < 2 {
                    return None;
                }
                let version = i16::from_be_bytes([bytes[0], bytes[1]]);
                let _ = bytes::Buf::get_i16(&mut bytes);
                let subscription =
                    ConsumerProtocolSubscription::decode(&mut bytes, version.clamp(0, 3)).ok()?;
                topics.extend(subscription.topics.iter().map(|t| t.to_string()));
            }
        }
        Some(topics)
    }

    /// OffsetDelete: drops committed offsets of partitions the group does not subscribe to.
    /// Returns the group-level error, or per-partition errors.
    pub fn delete_offsets(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        partitions: Vec<(String, i32)>,
    ) -> Result<Vec<(String, i32, Option<GroupError>)>, GroupDeleteError> {
        let (deletable, results) = {
            let state = self.lock();
            let group = state
                .groups
                .get(group_id)
                .filter(|g| g.state != GroupState::Dead);
            if group.is_none() && !state.offsets.contains_key(group_id) {
                return Err(not_found(group_id));
            }
            let subscribed = match group {
                Some(g) if !g.is_empty() => Self::subscribed_topics(g),
                _ => Some(Vec::new()),
            };
            let mut deletable = Vec::new();
            let mut results = Vec::new();
            for (topic, partition) in partitions {
                let error = match &subscribed {
                    Some(list) if !list.contains(&topic) => None,
                    _ => Some(GroupError::SubscribedToTopic {
                        topic: topic.clone(),
                    }),
                };
                let committed = state
                    .offsets
                    .get(group_id)
                    .is_some_and(|o| o.contains_key(&(topic.clone(), partition)));
                if error.is_none() && committed {
                    deletable.push((topic.clone(), partition));
                }
                results.push((topic, partition, error));
            }
            (deletable, results)
        };
        if !deletable.is_empty() {
            self.append_tombstones(topics, group_id, &deletable)?;
            let mut state = self.lock();
            if let Some(offsets) = state.offsets.get_mut(group_id) {
                for key in &deletable {
                    offsets.remove(key);
                }
            }
        }
        Ok(results)
    }

    /// KIP-211: the committed offsets of a group with no members expire `retention_ms` after
    /// the later of its last commit and the last time it had members.
    pub fn expire_offsets(&self, topics: &TopicRegistry, retention_ms: i64) {
        let now_ms = self.clock.now_ms();
        let expired: Vec<(String, Vec<(String, i32)>)> = {
            let mut state = self.lock();
            let CoordinatorState {
                groups,
                offsets,
                last_active_ms,
                ..
            } = &mut *state;
            for (id, group) in groups.iter() {
                if !group.is_empty() {
                    last_active_ms.insert(id.clone(), now_ms);
                }
            }
            offsets
                .iter()
                .filter(|(id, _)| groups.get(*id).is_none_or(|g| g.is_empty()))
                .filter_map(|(id, committed)| {
                    let last_commit = committed
                        .values()
                        .map(|o| o.commit_timestamp_ms)
                        .max()
                        .unwrap_or(0);
                    let active = last_active_ms.get(id).copied().unwrap_or(0);
                    (now_ms - last_commit.max(active) > retention_ms)
                        .then(|| (id.clone(), committed.keys().cloned().collect()))
                })
                .collect()
        };
        for (group_id, partitions) in expired {
            tracing::info!(group = %group_id, partitions = partitions.len(), "committed offsets expired");
            if let Err(error) = self.append_tombstones(topics, &group_id, &partitions) {
                tracing::warn!(group = %group_id, %error, "could not write offset expiry");
                continue;
            }
            let mut state = self.lock();
            state.offsets.remove(&group_id);
            // An empty group without offsets is gone, as in Kafka; so is its metadata.
            let empty = state.groups.get(&group_id).is_none_or(|g| g.is_empty());
            if empty {
                state.groups.remove(&group_id);
                drop(state);
                if let Err(error) = self.forget_group(topics, &group_id) {
                    tracing::warn!(group = %group_id, %error, "could not delete group metadata");
                }
            }
        }
    }
}
