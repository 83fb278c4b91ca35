//! The order Kafka lists OffsetCommit and TxnOffsetCommit answers in: first the topics whose
//! partitions its handler refused (authorization, unknown topic or partition), in request
//! order; then the coordinator's answers merged in — into the refused entry of the same topic,
//! after its partitions, else as topics of their own after the refused ones.

use kafka_protocol::messages::TopicName;

/// Partition answers collected per topic, in Kafka's order once [`CommitOrder::into_topics`].
pub struct CommitOrder<P> {
    refused: Vec<(TopicName, Vec<P>)>,
    answered: Vec<(TopicName, Vec<P>)>,
}

impl<P> Default for CommitOrder<P> {
    fn default() -> Self {
        CommitOrder {
            refused: Vec::new(),
            answered: Vec::new(),
        }
    }
}

impl<P> CommitOrder<P> {
    /// One partition's answer; `refused_by_handler` when the handler itself refused it.
    pub fn push(&mut self, topic: &TopicName, partition: P, refused_by_handler: bool) {
        let bucket = match refused_by_handler {
            true => &mut self.refused,
            false => &mut self.answered,
        };
        match bucket.last_mut() {
            Some((name, partitions)) if name == topic => partitions.push(partition),
            _ => bucket.push((topic.clone(), vec![partition])),
        }
    }

    /// The response's topics, each made by `topic(name, partitions)`.
    pub fn into_topics<T>(self, topic: impl Fn(TopicName, Vec<P>) -> T) -> Vec<T> {
        let mut ordered = self.refused;
        for (name, partitions) in self.answered {
            match ordered.iter_mut().find(|(early, _)| *early == name) {
                Some((_, early)) => early.extend(partitions),
                None => ordered.push((name, partitions)),
            }
        }
        ordered
            .into_iter()
            .map(|(name, partitions)| topic(name, partitions))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::protocol::StrBytes;

    fn name(text: &'static str) -> TopicName {
        TopicName(StrBytes::from_static_str(text))
    }

    #[test]
    fn refused_topics_come_first_and_a_topic_keeps_one_entry() {
        let mut order = CommitOrder::default();
        order.push(&name("a"), 0, false);
        order.push(&name("b"), 0, true);
        order.push(&name("c"), 0, false);
        order.push(&name("c"), 1, true);
        order.push(&name("c"), 2, false);
        let topics = order.into_topics(|topic, partitions| (topic.to_string(), partitions));
        assert_eq!(
            topics,
            [
                ("b".to_string(), vec![0]),
                ("c".to_string(), vec![1, 0, 2]),
                ("a".to_string(), vec![0]),
            ]
        );
    }
}
