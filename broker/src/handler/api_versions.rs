//! ApiVersions: which APIs and versions this broker implements.
//!
//! A client that asks with a newer ApiVersions version than we implement gets a version-0
//! response with UNSUPPORTED_VERSION and the full list, so it can retry with a version we know
//! (KIP-511). Tagged fields that equal their defaults are not written (Debian's librdkafka 2.0.2
//! cannot parse them).

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
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

pub fn handle(_version: i16, _request: ApiVersionsRequest) -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(api_list())
}

/// The answer to an ApiVersions request of a version newer than we implement (sent as v0).
pub fn unsupported_version_response() -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_error_code(ResponseError::UnsupportedVersion.code())
        .with_api_keys(api_list())
}
