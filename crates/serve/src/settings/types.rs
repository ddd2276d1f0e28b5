//! What `[api]`, `[operations.api]` and `[ui]` say, as types: how a world answers,
//! apart from reading it out of `connector.toml` (the parent module, `settings`).
//! Everything that answers requests names these; only the reading names the parsers.

use crate::listing::Listing;
use crate::nested::types::Nesting;
use crate::page::member::Member;
use crate::reply::{Refusal, Refusals, Shape};
use gateway_world::json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How list routes paginate.
#[derive(Debug, Clone, PartialEq)]
pub struct Paging {
    /// none | offset | cursor.
    pub style: String,
    /// Query parameter carrying the page size.
    pub limit_param: String,
    /// Query parameter carrying the offset.
    pub offset_param: String,
    /// Query parameter carrying the cursor.
    pub cursor_param: String,
    /// Query parameter carrying the page number (page style, from 1).
    pub page_param: String,
    /// Rows per page when the client does not say.
    pub page_size: i64,
}

/// `[operations.api]` of one operation.
#[derive(Debug, Clone)]
pub struct OperationSettings {
    /// Argument → row field path (dotted).
    pub filter: Vec<(String, String)>,
    /// Argument → equals | contains | prefix.
    pub matching: BTreeMap<String, String>,
    /// read | create | update | delete | handler.
    pub action: String,
    /// Success status.
    pub status: i64,
    /// Envelope key override (None inherits `[api].envelope`).
    pub envelope: Option<String>,
    /// Answer the row itself, not a list envelope.
    pub single: bool,
    /// Row field ← body path.
    pub body: Vec<(String, String)>,
    /// Constant fields of created rows.
    pub defaults: Map,
    /// Generated fields: uuid | int | now.
    pub generate: Vec<(String, String)>,
    /// Handler function name.
    pub handler: Option<String>,
    /// Paging style override.
    pub paging: Option<String>,
    /// Sample argument values (for conformance runs).
    pub sample: BTreeMap<String, String>,
    /// `api.parent` / `api.link`: the rows are a parent's (see `nested`).
    pub nesting: Option<Nesting>,
    /// `api.query_defaults`, `api.any`, `api.sort` (see `listing`).
    pub listing: Listing,
    /// `api.computed`: fields of a created row from templates (see `vendor`).
    pub computed: Vec<(String, String)>,
    /// `api.headers`: headers of this operation's answers.
    pub headers: Vec<(String, String)>,
    /// `api.answer` of `action = "static"`: the constant body.
    pub answer: Option<Value>,
    /// `api.nulls`: fields a created row holds as null unless given (TOML has no null
    /// for `defaults` to say it with).
    pub nulls: Vec<String>,
    /// `api.not_found`, `invalid`, `conflict`: this operation's refusals (see `reply`).
    pub refusals: Refusals,
    /// `api.wrap` and `api.lift`: how the answer holds the row (see `reply`).
    pub shape: Shape,
    /// `api.required`: parameters a request must carry.
    pub required: Vec<String>,
    /// `api.more_key`: this list's "is there more" member (None: `[api]`'s).
    pub more_key: Option<Member>,
}

impl Default for OperationSettings {
    fn default() -> Self {
        OperationSettings {
            filter: Vec::new(),
            matching: BTreeMap::new(),
            action: "read".into(),
            status: 200,
            envelope: None,
            single: false,
            body: Vec::new(),
            defaults: Map::default(),
            generate: Vec::new(),
            handler: None,
            paging: None,
            sample: BTreeMap::new(),
            nesting: None,
            listing: Listing::default(),
            computed: Vec::new(),
            headers: Vec::new(),
            answer: None,
            nulls: Vec::new(),
            refusals: Refusals::default(),
            shape: Shape::default(),
            required: Vec::new(),
            more_key: None,
        }
    }
}

/// `[ui]`: a prebuilt single-page app served beside the API.
#[derive(Debug, Clone)]
pub struct UiSettings {
    /// Directory in the world holding `index.html`.
    pub static_dir: String,
    /// The page an agent lands on first.
    pub entry: String,
    /// Same-origin prefix the app calls the API at.
    pub api_path: String,
}

/// Everything `[api]` says, with per-operation settings.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    /// Envelope key of list answers ("" = bare array).
    pub envelope: String,
    /// Body of 401-style answers.
    pub unauthorized: Value,
    /// Body of not-found answers.
    pub not_found: Value,
    /// Status of unauthorized answers.
    pub unauthorized_status: i64,
    /// Status of not-found answers.
    pub not_found_status: i64,
    /// Body of invalid-request answers.
    pub invalid: Value,
    /// Status of invalid-request answers.
    pub invalid_status: i64,
    /// Content type of error bodies.
    pub error_content_type: String,
    /// Envelope member of the total count (none: no total).
    pub hits_key: Member,
    /// Envelope member of the next cursor.
    pub cursor_key: Member,
    /// Envelope member saying whether another page follows (none by default).
    pub more_key: Member,
    /// `api.success`: members every successful answer holds (`{"ok": true}`).
    pub success: Map,
    /// `api.conflict`: the answer to a taken key (None: the `invalid` answer).
    pub conflict: Option<Refusal>,
    /// `api.body_params`: a request body's fields are read as parameters too.
    pub body_params: bool,
    /// `api.forms`: a body declared a form (urlencoded or multipart) is read as an object
    /// of its fields; without it, a body that is not JSON is refused, as the original does.
    pub forms: bool,
    /// Envelope key of the previous cursor, if any.
    pub previous_key: Option<String>,
    /// cursor | total | previous → response header name.
    pub page_headers: Vec<(String, String)>,
    /// Next/previous as absolute URLs.
    pub page_links: bool,
    /// Paging defaults.
    pub paging: Paging,
    /// oauth2 token endpoint path.
    pub token_path: Option<String>,
    /// The handlers module, when the file exists.
    pub handlers: Option<PathBuf>,
    /// The gate function run before every operation.
    pub before: Option<String>,
    /// Per-operation settings by operation name.
    pub operations: BTreeMap<String, OperationSettings>,
    /// The connector's `base_url` (computed fields' `{base_url}`).
    pub base_url: String,
    /// `api.rewrite_urls`: vendor URL prefixes rewritten to the serving address.
    pub rewrite: Vec<String>,
    /// `api.headers`: headers of every answer.
    pub headers: Vec<(String, String)>,
    /// `auth.anonymous`: methods answered without a credential (e.g. `["GET"]`).
    pub anonymous: Vec<String>,
    /// The static UI, if any.
    pub ui: Option<UiSettings>,
}

impl ApiSettings {
    /// The settings of one operation (defaults when it has no `[operations.api]`),
    /// borrowed: every request reads them, and a copy of their maps cost more than
    /// the lookup.
    pub fn for_operation(&self, name: &str) -> &OperationSettings {
        static DEFAULTS: std::sync::OnceLock<OperationSettings> = std::sync::OnceLock::new();
        self.operations.get(name).unwrap_or_else(|| DEFAULTS.get_or_init(OperationSettings::default))
    }
}
