//! The security section of the differential scenario, run by `compat/security/run.sh` against a
//! Weir and a Kafka broker configured alike: a PLAINTEXT listener whose ANONYMOUS is a super user
//! (the admin, `self.client`), a SASL_SSL listener with PLAIN users `alice` and `bob`, and the
//! StandardAuthorizer with `allow.everyone.if.no.acl.found=false`.
//!
//! Steps: login failures (wrong password, unknown mechanism, a request before authenticating,
//! SCRAM with a credential made through AlterUserScramCredentials); every kind of request alice
//! makes without ACLs; the ACLs the admin creates (a prefixed READ, a literal WRITE, a DENY that
//! wins over the prefixed allow, a group and a transactional id) and what alice may do then —
//! hidden topics, implied DESCRIBE, KIP-679's idempotent producer; DescribeAcls and DeleteAcls
//! as the admin sees them; and alice refused again once the ACLs are gone.

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use serde_json::{json, Value};
use weir_wire::{ClientSecurity, ProtocolClient, ScramMechanism, DEFAULT_TIMEOUT};

use crate::{batch, name, text, Scenario};

const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const TRANSACTIONAL_ID: i8 = 5;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const READ: i8 = 3;
const WRITE: i8 = 4;
const DENY: i8 = 2;
const ALLOW: i8 = 3;
const ANY: i8 = 1;

/// Where the SASL_SSL listener is and the CA its certificate chains to.
pub(crate) struct SecureListener {
    pub(crate) address: String,
    pub(crate) ca: String,
}

impl SecureListener {
    fn security(&self, extra: &[(&str, &str)]) -> anyhow::Result<ClientSecurity> {
        let mut properties = vec![("ssl.ca.location", self.ca.as_str())];
        properties.extend_from_slice(extra);
        Ok(ClientSecurity::from_properties(properties)?)
    }

    async fn login(
        &self,
        mechanism: &str,
        user: &str,
        password: &str,
    ) -> Result<ProtocolClient, String> {
        let security = self
            .security(&[
                ("security.protocol", "sasl_ssl"),
                ("sasl.mechanism", mechanism),
                ("sasl.username", user),
                ("sasl.password", password),
            ])
            .map_err(|e| e.to_string())?;
        ProtocolClient::connect_secured(
            &self.address,
            "compat-security",
            DEFAULT_TIMEOUT,
            &security,
        )
        .await
        .map_err(|e| e.to_string())
    }

    /// TLS without a login: for the handshake and pre-authentication steps.
    pub(crate) async fn tls_only(&self) -> anyhow::Result<ProtocolClient> {
        let security = self.security(&[("security.protocol", "ssl")])?;
        Ok(ProtocolClient::connect_secured(
            &self.address,
            "compat-security",
            DEFAULT_TIMEOUT,
            &security,
        )
        .await?)
    }
}

/// The reason of a refused login without the broker's address (it differs between brokers).
fn reason(error: &str) -> String {
    error
        .split_once("refused the login: ")
        .map_or(error, |(_, reason)| reason)
        .to_string()
}

/// DescribeAcls for bindings of a resource type (ANY: all), name and principal (`None`: any),
/// whatever their pattern, host, operation and permission.
fn describe_filter(
    resource_type: i8,
    name: Option<&str>,
    principal: Option<&str>,
) -> DescribeAclsRequest {
    DescribeAclsRequest::default()
        .with_resource_type_filter(resource_type)
        .with_resource_name_filter(name.map(text))
        .with_pattern_type_filter(ANY)
        .with_principal_filter(principal.map(text))
        .with_host_filter(None)
        .with_operation(ANY)
        .with_permission_type(ANY)
}

/// The DeleteAcls filter matching what [`describe_filter`] describes.
fn delete_filter(
    resource_type: i8,
    name: Option<&str>,
    principal: Option<&str>,
) -> delete_acls_request::DeleteAclsFilter {
    delete_acls_request::DeleteAclsFilter::default()
        .with_resource_type_filter(resource_type)
        .with_resource_name_filter(name.map(text))
        .with_pattern_type_filter(ANY)
        .with_principal_filter(principal.map(text))
        .with_host_filter(None)
        .with_operation(ANY)
        .with_permission_type(ANY)
}

/// A refusal's message with the request's description left out: Kafka prints its internal
/// request object there ("Request Request(processor=4, connectionId=…) is not authorized.").
fn request_refusal(message: Option<&str>) -> Option<String> {
    let message = message?;
    let Some(rest) = message.strip_prefix("Request ") else {
        return Some(message.to_string());
    };
    for ending in [" is not authorized.", " permission."] {
        if let Some(at) = rest.rfind(ending) {
            let tail = &rest[..at];
            let verb = tail.rfind(" needs ").map_or("", |i| &tail[i..]);
            return Some(format!("Request …{verb}{ending}"));
        }
    }
    Some(message.to_string())
}

impl Scenario {
    pub(crate) async fn security_section(&mut self, secure: &SecureListener) -> anyhow::Result<()> {
        self.login_steps(secure).await?;
        let orders = self.topic("sec-orders");
        let private = self.topic("sec-private");
        let hidden = self.topic("hidden");
        for topic in [&orders, &private, &hidden] {
            self.create_topic(topic, 1, 1, &[]).await?;
            self.wait_ready(topic).await?;
            let records = batch(
                &[(None, "one", 1_000), (None, "two", 2_000)],
                Compression::None,
            );
            self.produce(topic, 0, -1, records).await?;
        }
        let mut alice = secure
            .login("PLAIN", "alice", "alice-secret")
            .await
            .map_err(anyhow::Error::msg)?;
        std::mem::swap(&mut self.client, &mut alice);
        let outcome = self
            .alice_steps("without_acls", &orders, &private, &hidden)
            .await;
        std::mem::swap(&mut self.client, &mut alice);
        outcome?;

        self.create_acls(&orders, &private).await?;
        std::mem::swap(&mut self.client, &mut alice);
        let outcome = async {
            self.wait_visible(&orders, true).await?;
            self.alice_steps("with_acls", &orders, &private, &hidden)
                .await?;
            self.transactional_offsets(&orders, &private).await
        }
        .await;
        std::mem::swap(&mut self.client, &mut alice);
        outcome?;

        self.delete_acls().await?;
        std::mem::swap(&mut self.client, &mut alice);
        let outcome = async {
            self.wait_visible(&orders, false).await?;
            let step = self.visible_topics().await?;
            self.note("security/after_delete/metadata_all", step);
            let step = self.fetch(&orders, 0, 0, 1 << 20).await?;
            self.note(
                "security/after_delete/fetch",
                json!({"error": step["error"]}),
            );
            Ok::<_, anyhow::Error>(())
        }
        .await;
        std::mem::swap(&mut self.client, &mut alice);
        outcome
    }

    async fn login_steps(&mut self, secure: &SecureListener) -> anyhow::Result<()> {
        let refused = secure
            .login("PLAIN", "alice", "wrong")
            .await
            .err()
            .unwrap_or_default();
        self.note(
            "security/login/plain_wrong_password",
            json!(reason(&refused)),
        );
        let refused = secure
            .login("PLAIN", "mallory", "x")
            .await
            .err()
            .unwrap_or_default();
        self.note("security/login/plain_unknown_user", json!(reason(&refused)));

        let mut raw = secure.tls_only().await?;
        let handshake = SaslHandshakeRequest::default().with_mechanism(text("GSSAPI"));
        let answer = raw.call(1, &handshake).await?;
        let mut mechanisms: Vec<String> = answer.mechanisms.iter().map(|m| m.to_string()).collect();
        mechanisms.sort();
        self.note(
            "security/login/unknown_mechanism",
            json!({"error": answer.error_code, "mechanisms": mechanisms}),
        );
        let mut raw = secure.tls_only().await?;
        let before = raw
            .call(12, &MetadataRequest::default().with_topics(None))
            .await;
        self.note(
            "security/login/metadata_before_authenticating",
            json!({"answered": before.is_ok()}),
        );

        // A SCRAM credential made by the admin, used, then a wrong password for it.
        let salt = b"compat-security-salt".to_vec();
        let mechanism = ScramMechanism::Sha256;
        let salted = mechanism.salted_password(b"bob-scram", &salt, 4096);
        let upsert = alter_user_scram_credentials_request::ScramCredentialUpsertion::default()
            .with_name(text("bob"))
            .with_mechanism(mechanism.type_code())
            .with_iterations(4096)
            .with_salt(Bytes::from(salt))
            .with_salted_password(Bytes::from(salted));
        let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![upsert]);
        let altered = self.client.call(0, &request).await?;
        self.note(
            "security/scram/alter",
            json!(altered
                .results
                .iter()
                .map(|r| r.error_code)
                .collect::<Vec<_>>()),
        );
        let mut logged_in = Err(String::new());
        for _ in 0..50 {
            logged_in = secure
                .login("SCRAM-SHA-256", "bob", "bob-scram")
                .await
                .map(|_| ());
            if logged_in.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        self.note(
            "security/scram/login",
            json!(logged_in.err().map(|e| reason(&e))),
        );
        let refused = secure
            .login("SCRAM-SHA-256", "bob", "wrong")
            .await
            .err()
            .unwrap_or_default();
        self.note("security/scram/wrong_password", json!(reason(&refused)));
        let refused = secure
            .login("SCRAM-SHA-512", "bob", "bob-scram")
            .await
            .err()
            .unwrap_or_default();
        self.note(
            "security/scram/no_credential_for_mechanism",
            json!(reason(&refused)),
        );
        Ok(())
    }

    /// What alice's requests get, recorded under `security/<phase>/…`.
    async fn alice_steps(
        &mut self,
        phase: &str,
        orders: &str,
        private: &str,
        hidden: &str,
    ) -> anyhow::Result<()> {
        let step = |what: &str| format!("security/{phase}/{what}");
        let value = self.visible_topics().await?;
        self.note(&step("metadata_all"), value);
        for (label, topic) in [("orders", orders), ("private", private), ("hidden", hidden)] {
            let metadata = self.metadata(topic, false).await?;
            self.note(
                &step(&format!("metadata/{label}")),
                json!({"error": metadata["error"]}),
            );
            let records = batch(&[(None, "from-alice", 3_000)], Compression::None);
            let produced = self.produce(topic, 0, -1, records).await?;
            self.note(
                &step(&format!("produce/{label}")),
                json!({"error": produced["error"]}),
            );
            let fetched = self.fetch(topic, 0, 0, 1 << 20).await?;
            let values: Vec<Value> = fetched["records"]
                .as_array()
                .map(|records| records.iter().map(|r| r["value"].clone()).collect())
                .unwrap_or_default();
            self.note(
                &step(&format!("fetch/{label}")),
                json!({"error": fetched["error"], "values": values}),
            );
            let listed = self.list_offset(topic, 0, -1).await?;
            self.note(
                &step(&format!("list_offsets/{label}")),
                json!({"error": listed["error"]}),
            );
        }
        let missing = self.topic("sec-missing");
        let auto = self.metadata(&missing, true).await?;
        self.note(
            &step("metadata/auto_create"),
            json!({"error": auto["error"]}),
        );
        let created = self.create_topic(&self.topic("sec-new"), 1, 1, &[]).await?;
        self.note(&step("create_topics"), json!({"error": created["error"]}));
        let deleted = self.delete_topic(hidden).await?;
        self.note(&step("delete_topics/hidden"), deleted);
        let deleted = self.delete_records(orders, 0, 1).await?;
        self.note(
            &step("delete_records/orders"),
            json!({"error": deleted["error"]}),
        );
        let configs = self.describe_configs(orders).await?;
        self.note(
            &step("describe_configs/orders"),
            json!({"error": configs["error"]}),
        );
        let groups = self.group_steps(orders, private).await?;
        self.note(&step("groups"), groups);
        let idempotent = self.init_idempotent().await?;
        self.note(
            &step("init_producer_id/idempotent"),
            json!({"error": idempotent.error_code}),
        );
        for (label, id) in [
            ("allowed", self.topic("t")),
            ("other", self.topic("other-t")),
        ] {
            // As clients: the transaction coordinator first (Kafka creates its topic then).
            let found = self.coordinator_error(1, &id).await?;
            self.note(
                &step(&format!("find_coordinator/txn_{label}")),
                json!({"error": found}),
            );
            let request = InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(text(&id))))
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            let answer = self
                .call_retrying(4, &request, |r| matches!(r.error_code, 14 | 15 | 16 | 51))
                .await?;
            self.note(
                &step(&format!("init_producer_id/{label}")),
                json!({"error": answer.error_code}),
            );
        }
        let described = self
            .client
            .call(3, &describe_filter(ANY, None, None))
            .await?;
        self.note(
            &step("describe_acls"),
            json!({"error": described.error_code, "message": request_refusal(described.error_message.as_deref())}),
        );
        let creation = create_acls_request::AclCreation::default()
            .with_resource_type(TOPIC)
            .with_resource_name(text(orders))
            .with_resource_pattern_type(LITERAL)
            .with_principal(text("User:alice"))
            .with_host(text("*"))
            .with_operation(WRITE)
            .with_permission_type(ALLOW);
        let created = self
            .client
            .call(
                3,
                &CreateAclsRequest::default().with_creations(vec![creation]),
            )
            .await?;
        let results: Vec<Value> = created
            .results
            .iter()
            .map(|r| json!({"error": r.error_code, "message": request_refusal(r.error_message.as_deref())}))
            .collect();
        self.note(&step("create_acls"), json!(results));
        let filter = delete_filter(TOPIC, Some(orders), None);
        let deleted = self
            .client
            .call(3, &DeleteAclsRequest::default().with_filters(vec![filter]))
            .await?;
        let results: Vec<Value> = deleted
            .filter_results
            .iter()
            .map(|r| json!({"error": r.error_code, "message": request_refusal(r.error_message.as_deref()), "matching": r.matching_acls.len()}))
            .collect();
        self.note(&step("delete_acls"), json!(results));
        let cluster = self
            .client
            .call(
                0,
                &DescribeClusterRequest::default().with_include_cluster_authorized_operations(true),
            )
            .await?;
        self.note(
            &step("describe_cluster"),
            json!({"error": cluster.error_code, "operations": cluster.cluster_authorized_operations}),
        );
        Ok(())
    }

    /// Alice's transaction commits offsets of a topic she may read, one she may not and one
    /// that does not exist: which error each gets, in the order the response lists them.
    async fn transactional_offsets(&mut self, orders: &str, private: &str) -> anyhow::Result<()> {
        let id = self.topic("t");
        let group = self.topic("g");
        let init = self.init_transactional(&id, 60_000).await?;
        let epoch = init.producer_epoch;
        let add = AddOffsetsToTxnRequest::default()
            .with_transactional_id(TransactionalId(text(&id)))
            .with_producer_id(init.producer_id)
            .with_producer_epoch(epoch)
            .with_group_id(GroupId(text(&group)));
        let added = self.call_retrying(3, &add, |r| r.error_code == 51).await?;
        let missing = self.topic("sec-missing-offsets");
        let topics = [orders, private, missing.as_str()]
            .iter()
            .map(|topic| {
                txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                    .with_name(name(topic))
                    .with_partitions(vec![
                        txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(1)
                            .with_committed_leader_epoch(-1),
                    ])
            })
            .collect();
        let commit = TxnOffsetCommitRequest::default()
            .with_transactional_id(TransactionalId(text(&id)))
            .with_group_id(GroupId(text(&group)))
            .with_producer_id(init.producer_id)
            .with_producer_epoch(epoch)
            .with_generation_id(-1)
            .with_member_id(StrBytes::default())
            .with_topics(topics);
        let committed = self
            .call_retrying(3, &commit, |r| {
                r.topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .any(|p| matches!(p.error_code, 14 | 51))
            })
            .await?;
        let suffix = format!("-{}", self.run);
        let answers: Vec<Value> = committed
            .topics
            .iter()
            .map(|t| {
                let topic = t.name.to_string();
                let codes: Vec<i16> = t.partitions.iter().map(|p| p.error_code).collect();
                json!([topic.trim_end_matches(&suffix), codes])
            })
            .collect();
        let end = EndTxnRequest::default()
            .with_transactional_id(TransactionalId(text(&id)))
            .with_producer_id(init.producer_id)
            .with_producer_epoch(epoch)
            .with_committed(false);
        let ended = self.call_retrying(3, &end, |r| r.error_code == 51).await?;
        self.note(
            "security/with_acls/transactional_offsets",
            json!({"init": init.error_code, "add_offsets": added.error_code, "commit": answers, "abort": ended.error_code}),
        );
        Ok(())
    }

    /// The topics of this run alice's all-topics Metadata shows, sorted.
    async fn visible_topics(&mut self) -> anyhow::Result<Value> {
        let response = self
            .client
            .call(12, &MetadataRequest::default().with_topics(None))
            .await?;
        let suffix = format!("-{}", self.run);
        let mut names: Vec<String> = response
            .topics
            .iter()
            .filter_map(|t| t.name.as_ref().map(|n| n.to_string()))
            .filter(|n| n.ends_with(&suffix))
            .map(|n| n.trim_end_matches(&suffix).to_string())
            .collect();
        names.sort();
        Ok(json!(names))
    }

    /// Waits until alice's Metadata shows `topic` (ACLs applied) or no longer does.
    async fn wait_visible(&mut self, topic: &str, visible: bool) -> anyhow::Result<()> {
        for _ in 0..100 {
            let step = self.metadata(topic, false).await?;
            if (step["error"] == 0) == visible {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        anyhow::bail!(
            "{topic} did not become {}",
            if visible { "visible" } else { "hidden" }
        )
    }

    /// FindCoordinator's error for a group (0) or transactional id (1), retried while the
    /// coordinator is not available yet.
    async fn coordinator_error(&mut self, key_type: i8, key: &str) -> anyhow::Result<i16> {
        let find = FindCoordinatorRequest::default()
            .with_key_type(key_type)
            .with_key(text(key));
        let found = self.call_retrying(3, &find, |r| r.error_code == 15).await?;
        Ok(found.error_code)
    }

    /// FindCoordinator, JoinGroup, OffsetCommit and OffsetFetch for the allowed group and
    /// another one.
    async fn group_steps(&mut self, orders: &str, private: &str) -> anyhow::Result<Value> {
        let mut steps = serde_json::Map::new();
        for (label, group) in [
            ("allowed", self.topic("g")),
            ("other", self.topic("other-g")),
        ] {
            let found = self.coordinator_error(0, &group).await?;
            let protocol = join_group_request::JoinGroupRequestProtocol::default()
                .with_name(text("range"))
                .with_metadata(Bytes::from_static(b"subscription"));
            let join = JoinGroupRequest::default()
                .with_group_id(GroupId(text(&group)))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(10_000)
                .with_protocol_type(text("consumer"))
                .with_protocols(vec![protocol]);
            let joined = self
                .call_retrying(5, &join, |r| [14, 15, 16].contains(&r.error_code))
                .await?;
            let commit = OffsetCommitRequest::default()
                .with_group_id(GroupId(text(&group)))
                .with_generation_id_or_member_epoch(-1)
                .with_topics(
                    [orders, private]
                        .iter()
                        .map(|topic| {
                            offset_commit_request::OffsetCommitRequestTopic::default()
                                .with_name(name(topic))
                                .with_partitions(vec![
                                    offset_commit_request::OffsetCommitRequestPartition::default()
                                        .with_partition_index(0)
                                        .with_committed_offset(1),
                                ])
                        })
                        .collect(),
                );
            let committed = self
                .call_retrying(8, &commit, |r| {
                    r.topics
                        .iter()
                        .flat_map(|t| &t.partitions)
                        .any(|p| [14, 15, 16].contains(&p.error_code))
                })
                .await?;
            let commit_errors: Vec<i16> = committed
                .topics
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
                .collect();
            let fetch = OffsetFetchRequest::default()
                .with_group_id(GroupId(text(&group)))
                .with_topics(None);
            let fetched = self.client.call(7, &fetch).await?;
            let suffix = format!("-{}", self.run);
            let mut offsets: Vec<Value> = fetched
                .topics
                .iter()
                .flat_map(|t| {
                    let topic = t.name.to_string();
                    let topic = topic.trim_end_matches(&suffix).to_string();
                    t.partitions
                        .iter()
                        .map(move |p| json!([topic.clone(), p.committed_offset, p.error_code]))
                })
                .collect();
            offsets.sort_by_key(|o| o.to_string());
            steps.insert(
                label.to_string(),
                json!({
                    "find_coordinator": found,
                    "join": joined.error_code,
                    "commit": commit_errors,
                    "fetch": {"error": fetched.error_code, "offsets": offsets},
                }),
            );
        }
        Ok(Value::Object(steps))
    }

    async fn create_acls(&mut self, orders: &str, private: &str) -> anyhow::Result<()> {
        let acl = |resource_type: i8, name: &str, pattern: i8, operation: i8, permission: i8| {
            create_acls_request::AclCreation::default()
                .with_resource_type(resource_type)
                .with_resource_name(text(name))
                .with_resource_pattern_type(pattern)
                .with_principal(text("User:alice"))
                .with_host(text("*"))
                .with_operation(operation)
                .with_permission_type(permission)
        };
        let creations = vec![
            acl(TOPIC, "sec-", PREFIXED, READ, ALLOW),
            acl(TOPIC, orders, LITERAL, WRITE, ALLOW),
            acl(TOPIC, private, LITERAL, READ, DENY),
            acl(GROUP, &self.topic("g"), LITERAL, READ, ALLOW),
            acl(TRANSACTIONAL_ID, &self.topic("t"), LITERAL, WRITE, ALLOW),
            // A binding refused on its own: an operation code no operation has.
            acl(TOPIC, orders, LITERAL, 99, ALLOW),
        ];
        let response = self
            .client
            .call(3, &CreateAclsRequest::default().with_creations(creations))
            .await?;
        self.note(
            "security/create_acls",
            json!(response
                .results
                .iter()
                .map(|r| r.error_code)
                .collect::<Vec<_>>()),
        );
        // UNKNOWN (0) in a binding: Kafka refuses the request while parsing it and closes the
        // connection, on a connection of its own here.
        let mut another = ProtocolClient::connect(self.client.address()).await?;
        let unknown = CreateAclsRequest::default()
            .with_creations(vec![acl(TOPIC, orders, LITERAL, 0, ALLOW)]);
        let answered = another.call(3, &unknown).await;
        self.note(
            "security/create_acls/unknown_operation",
            json!({"answered": answered.is_ok()}),
        );
        let filter = describe_filter(ANY, None, Some("User:alice"));
        let described = self.client.call(3, &filter).await?;
        let suffix = format!("-{}", self.run);
        let mut bindings: Vec<Value> = described
            .resources
            .iter()
            .flat_map(|resource| {
                let name = resource.resource_name.to_string();
                let name = name.trim_end_matches(&suffix).to_string();
                resource.acls.iter().map(move |acl| {
                    json!([
                        resource.resource_type,
                        name.clone(),
                        resource.pattern_type,
                        acl.principal.to_string(),
                        acl.host.to_string(),
                        acl.operation,
                        acl.permission_type
                    ])
                })
            })
            .collect();
        bindings.sort_by_key(|b| b.to_string());
        self.note(
            "security/describe_acls",
            json!({"error": described.error_code, "bindings": bindings}),
        );
        Ok(())
    }

    async fn delete_acls(&mut self) -> anyhow::Result<()> {
        let filter = delete_filter(ANY, None, Some("User:alice"));
        let response = self
            .client
            .call(3, &DeleteAclsRequest::default().with_filters(vec![filter]))
            .await?;
        let results: Vec<Value> = response
            .filter_results
            .iter()
            .map(|r| json!({"error": r.error_code, "matching": r.matching_acls.len()}))
            .collect();
        self.note("security/delete_acls", json!(results));
        Ok(())
    }
}
