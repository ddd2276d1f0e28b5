//! Workspace connectors in storage (spec §3): a connector is a repo of template files
//! (`world.json`, `connector.toml`, `handlers.py`, …) owned by a project, with a chain
//! of commits. [`ConnectorStore`] is what the `/api/public/context/connectors` and
//! `/api/public/connectors/{hub,clone}` routes need (gateway-hub's `server/connectors.rs`); it is
//! implemented on SQLite (`sqlite/connectors.rs`) and PostgreSQL
//! (`postgres/connectors.rs`), over the tables of migrations 0006.
//!
//! A commit keeps the whole file set (a JSON object path → text) and the metadata the
//! hub listing shows, computed once when it is made. The head moves only by
//! [`ConnectorStore::commit_connector`], a compare-and-set on the head the server read:
//! two pushes from one parent — one wins, the other is a conflict.

use crate::error::{StoreError, StoreResult};
use async_trait::async_trait;

/// A connector repo.
#[derive(Debug, Clone, Default)]
pub struct ConnectorRepo {
    /// Id (`conn_…`).
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// Unique per project (lowercase letters, digits, `-`, `_`).
    pub slug: String,
    /// Display name.
    pub name: String,
    /// One-line description.
    pub description: Option<String>,
    /// Tags, a JSON array.
    pub tags: String,
    /// README text, if one was pushed.
    pub readme: Option<String>,
    /// Published: visible (and clonable) to every project of this hub.
    pub is_public: bool,
    /// `org` or `project`, as pushed.
    pub scope: String,
    /// The head commit's id (none only while the first commit is being written).
    pub head_commit_id: Option<String>,
    /// Where a clone came from: `{repoId, slug, orgName, commitId, commitHash}` (JSON), if any.
    pub cloned_from: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// Last commit time.
    pub updated_at: String,
}

/// One commit of a connector.
#[derive(Debug, Clone, Default)]
pub struct ConnectorCommit {
    /// Id (`ccm_…`).
    pub id: String,
    /// Its repo.
    pub repo_id: String,
    /// sha256 hex over the parent's hash, the files' digest and the message.
    pub commit_hash: String,
    /// The parent commit's hash, if any.
    pub parent_hash: Option<String>,
    /// Commit message.
    pub message: String,
    /// Who pushed it (`sdk`, `clone`, …).
    pub source: String,
    /// Labels given with the push (`--tag`), a JSON array.
    pub labels: String,
    /// The template, a JSON object path → text. Empty when read without files.
    pub files: String,
    /// `{vendor, auth, entityCount, operationCount, digest}` (JSON).
    pub metadata: String,
    /// Creation time.
    pub created_at: String,
}

impl ConnectorCommit {
    /// Its labels, out of the JSON array.
    pub fn label_list(&self) -> Vec<String> {
        crate::util::strings(gateway_world::json::parse_clean(&self.labels).as_ref())
    }
}

/// A hub listing row: a repo, its owning project's name and its head commit (read
/// without files).
#[derive(Debug, Clone, Default)]
pub struct HubRow {
    /// The repo.
    pub repo: ConnectorRepo,
    /// The owning project's name (the hub's "organization").
    pub org_name: String,
    /// The head commit, files left out.
    pub head: Option<ConnectorCommit>,
}

/// A page of a project's connectors, as a listing asks for it.
#[derive(Debug, Clone, Default)]
pub struct RepoListing {
    /// Only those whose slug, name or description holds this (case-insensitive).
    pub query: Option<String>,
    /// Only the published (`true`) or unpublished (`false`) ones.
    pub is_public: Option<bool>,
    /// The page size.
    pub limit: i64,
    /// How many to skip.
    pub offset: i64,
}

/// A commit to make: on a new repo (`repo.id` fresh, `expected_head` None) or on an
/// existing one whose head must still be `expected_head`.
#[derive(Debug, Clone)]
pub struct NewCommit {
    /// The repo as it should be after the commit (name, description, tags, … updated).
    pub repo: ConnectorRepo,
    /// Whether the repo is created by this commit.
    pub create: bool,
    /// The head commit id the commit was computed from (None for a new repo).
    pub expected_head: Option<String>,
    /// The commit.
    pub commit: ConnectorCommit,
}

impl NewCommit {
    /// The row a creating commit inserts: the repo without a head yet (its first commit is
    /// written after it, then the head moves onto it).
    pub fn new_repo_row(&self) -> ConnectorRepo {
        ConnectorRepo { head_commit_id: None, ..self.repo.clone() }
    }

    /// The refusal of a new repo whose slug the project already has.
    pub fn slug_taken(&self) -> StoreError {
        StoreError::Conflict(format!("connector '{}' already exists in this project", self.repo.slug))
    }

    /// The compare-and-set on an existing repo, given its id and head as they stand
    /// (None: it was deleted meanwhile).
    pub fn check_head(&self, current: Option<(String, Option<String>)>) -> Result<(), StoreError> {
        match current {
            None => Err(StoreError::Conflict(format!("connector '{}' was deleted meanwhile", self.repo.slug))),
            Some((id, head)) if id != self.repo.id || head != self.expected_head => {
                Err(StoreError::Conflict(format!("connector '{}' moved on meanwhile", self.repo.slug)))
            }
            Some(_) => Ok(()),
        }
    }

    /// The refusal of a commit the repo already holds.
    pub fn commit_exists(&self) -> StoreError {
        StoreError::Conflict(format!("commit {} already exists in connector '{}'", self.commit.commit_hash, self.repo.slug))
    }
}

/// Storage calls of the connector routes.
#[async_trait]
pub trait ConnectorStore: Send + Sync {
    /// A project's connector by slug.
    async fn connector_repo(&self, project_id: &str, slug: &str) -> StoreResult<Option<ConnectorRepo>>;
    /// A connector by id, with its owning project's name.
    async fn connector_repo_by_id(&self, id: &str) -> StoreResult<Option<(ConnectorRepo, String)>>;
    /// A project's connectors by slug, filtered as `listing` asks; the page and the total.
    async fn connector_repos(&self, project_id: &str, listing: &RepoListing) -> StoreResult<(Vec<ConnectorRepo>, i64)>;
    /// The hub: the project's own connectors and every other project's published ones,
    /// filtered by `query`, own first, then by slug.
    async fn connector_hub(&self, project_id: &str, query: Option<&str>) -> StoreResult<Vec<HubRow>>;
    /// One commit of a repo, with its files: the head (`None`), a label, a commit id,
    /// or a commit hash (or a unique prefix of at least 7 characters).
    async fn connector_commit(&self, repo_id: &str, version: Option<&str>) -> StoreResult<Option<ConnectorCommit>>;
    /// Make a commit and move the head to it, atomically: a new repo whose slug is taken,
    /// or a head that is no longer `expected_head`, is [`crate::StoreError::Conflict`].
    /// The commit's labels move to it.
    async fn commit_connector(&self, new: NewCommit) -> StoreResult<()>;
    /// Remove a connector and its commits; whether it existed.
    async fn delete_connector(&self, project_id: &str, slug: &str) -> StoreResult<bool>;
}

/// The `LIKE … ESCAPE '\'` pattern of a search: `query` lowercased, `%`, `_` and `\`
/// escaped, wrapped in `%…%` (None: no search, the query absent or empty).
pub fn like_pattern(query: Option<&str>) -> Option<String> {
    let query = query.filter(|q| !q.is_empty())?;
    let mut out = String::from("%");
    for c in query.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    Some(out)
}
