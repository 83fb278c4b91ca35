//! ApiVersions: which APIs and versions this broker implements.
//!
//! A client that asks with a newer ApiVersions version than we implement gets a version-0
//! response with UNSUPPORTED_VERSION and the full list, so it can retry with a version we know
//! (KIP-511). Tagged fields that equal their defaults are not written (Debian's librdkafka 2.0.2
//! cannot parse them).
//!
//! Features (KIP-584, v3+): `transaction.version` 2 is finalized, as on a new Kafka 4.x cluster,
//! so clients use transactions with an epoch bump per transaction (KIP-890 part 2).

use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::handler::SUPPORTED_APIS;

fn api_list() -> Vec<ApiVersion> {
    SUPPORTED_APIS
        .iter()
        .map(|(key, min, max)| {
            ApiVersion::default()
                .with_api_key(*key as i16)
                .with_min_version(*min)
                .with_max_version(*max)
        })
        .collect()
}

/// Feature name, supported range, finalized level.
const FEATURES: &[(&str, i16, i16, i16)] = &[("transaction.version", 0, 2, 2)];
/// The epoch of the finalized features: they never change on a running Weir.
const FINALIZED_FEATURES_EPOCH: i64 = 1;

pub fn handle(_version: i16, _request: ApiVersionsRequest) -> ApiVersionsResponse {
    let supported = FEATURES.iter().map(|(name, min, max, _)| {
        SupportedFeatureKey::default()
            .with_name(StrBytes::from_static_str(name))
            .with_min_version(*min)
            .with_max_version(*max)
    });
    let finalized = FEATURES.iter().map(|(name, _, _, level)| {
        FinalizedFeatureKey::default()
            .with_name(StrBytes::from_static_str(name))
            .with_min_version_level(*level)
            .with_max_version_level(*level)
    });
    ApiVersionsResponse::default()
        .with_api_keys(api_list())
        .with_supported_features(supported.collect())
        .with_finalized_features_epoch(FINALIZED_FEATURES_EPOCH)
        .with_finalized_features(finalized.collect())
}

/// The answer to an ApiVersions request of a version newer than we implement (sent as v0).
pub fn unsupported_version_response() -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_error_code(ResponseError::UnsupportedVersion.code())
        .with_api_keys(api_list())
}
