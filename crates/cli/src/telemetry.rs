//! OpenTelemetry export of the servers' spans (`hub serve`, `host serve`, `worlds
//! serve`): when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `…_TRACES_ENDPOINT`) is set, every
//! `tracing` span — a request, the handler call inside it, a grade — goes to that
//! collector over OTLP/HTTP, protobuf by default or JSON with
//! `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`, batched on a thread of its own
//! (`OTEL_BSP_*` tune it; `OTEL_SERVICE_NAME` names the service, `gateway` by default).
//!
//! gRPC is not built in (it would bring a second HTTP stack into the binary); asked
//! for, the export is left off with a warning. Nothing is exported without the
//! variable, and the exporter adds no cost then.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::sync::OnceLock;

/// Flushes and stops the export when dropped (at the end of `main`).
pub(crate) struct Telemetry {
    provider: SdkTracerProvider,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        let _ = self.provider.shutdown();
    }
}

/// The OTLP exporter's transport: the workspace's reqwest (blocking), made on the
/// export thread at its first batch — the batch processor runs exports on a thread of
/// its own with a plain executor, where a blocking client is at home and an async one
/// would have no runtime.
#[derive(Debug, Default)]
struct BlockingClient(OnceLock<Result<reqwest::blocking::Client, String>>);

#[async_trait::async_trait]
impl HttpClient for BlockingClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self
            .0
            .get_or_init(|| {
                reqwest::blocking::Client::builder().timeout(std::time::Duration::from_secs(10)).build().map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| HttpError::from(e.clone()))?;
        let (parts, body) = request.into_parts();
        let answer = client.request(parts.method, parts.uri.to_string()).headers(parts.headers).body(body.to_vec()).send()?;
        let status = answer.status();
        let headers = answer.headers().clone();
        let mut response = Response::new(answer.bytes()?);
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}

fn configured() -> bool {
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()))
}

/// The protocol the environment asks for (the traces' variable first), protobuf by default.
fn protocol() -> Result<Protocol, String> {
    let asked = ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()));
    match asked.as_deref().map(str::trim) {
        None | Some("http/protobuf") => Ok(Protocol::HttpBinary),
        Some("http/json") => Ok(Protocol::HttpJson),
        Some(other) => Err(format!("OTEL_EXPORTER_OTLP_PROTOCOL={other} is not supported here (http/protobuf or http/json)")),
    }
}

/// The tracing layer exporting spans, and the guard that flushes them, when the
/// environment names a collector; None otherwise (or, with a warning on stderr, when
/// the exporter cannot be built).
pub(crate) fn layer<S>() -> Option<(tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::SdkTracer>, Telemetry)>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    if !configured() {
        return None;
    }
    let built = protocol().and_then(|protocol| {
        opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .with_http_client(BlockingClient::default())
            .build()
            .map_err(|e| e.to_string())
    });
    let exporter = match built {
        Ok(exporter) => exporter,
        Err(reason) => {
            eprintln!("gateway: OpenTelemetry export is off: {reason}");
            return None;
        }
    };
    let service = std::env::var("OTEL_SERVICE_NAME").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "gateway".into());
    let resource = opentelemetry_sdk::Resource::builder().with_service_name(service).build();
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
    let tracer = provider.tracer("gateway");
    Some((tracing_opentelemetry::layer().with_tracer(tracer), Telemetry { provider }))
}
