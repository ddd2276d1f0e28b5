//! The records the metadata store keeps of the benchmark containers (containers,
//! versions, refs, proposals, secrets' public faces, declared wheels) and the decisions
//! both back ends share about them (a branch's compare-and-set, a finalize's lineage, a
//! fork's copy, the refusals of a taken name). A leaf: the sub-stores (evaluations,
//! world data) name these records without naming the store that unites them.

use crate::error::{StoreError, StoreResult};

/// A container: a named, versioned world in one project.
#[derive(Debug, Clone, Default)]
pub struct Container {
    /// Id (`cnt_…`).
    pub id: String,
    /// Owning project id.
    pub project_id: String,
    /// Unique per project.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// Optional description.
    pub description: Option<String>,
    /// Tags, as a canonical JSON array.
    pub tags: String,
    /// `PRIVATE` or `PUBLIC`.
    pub visibility: String,
    /// The version this container was forked from, if any.
    pub forked_from_version_id: Option<String>,
    /// Creation time.
    pub created_at: String,
}

/// An immutable version of a container, keyed by its content hash.
#[derive(Debug, Clone, Default)]
pub struct Version {
    /// Id (`ver_…`).
    pub id: String,
    /// Container id.
    pub container_id: String,
    /// The §9.1 content hash (64 hex).
    pub content_hash: String,
    /// base64 sha256 of the tarball.
    pub bundle_sha256: String,
    /// Tarball size.
    pub bundle_size: i64,
    /// `[project].version`, if any.
    pub semantic_version: Option<String>,
    /// pyproject metadata, canonical JSON object.
    pub pyproject_meta: String,
    /// File manifest, canonical JSON array.
    pub file_manifest: String,
    /// `PENDING` until finalized, then `READY`.
    pub state: String,
    /// `-m` of the push.
    pub change_reason: Option<String>,
    /// `--author` of the push.
    pub author: Option<String>,
    /// `--image` of the push.
    pub image_ref: Option<String>,
    /// Object key of the tarball.
    pub object_key: String,
    /// Whether the tarball is stored.
    pub uploaded: bool,
    /// Wheel file name, when a wheel was announced.
    pub wheel_filename: Option<String>,
    /// base64 sha256 of the wheel.
    pub wheel_sha256: Option<String>,
    /// Wheel size.
    pub wheel_size: Option<i64>,
    /// Whether the wheel is stored.
    pub wheel_uploaded: bool,
    /// Requires-Dist lines, canonical JSON array.
    pub requires_dist: String,
    /// Lineage: the base (or previous tip) at first finalize, or the fork source.
    pub forked_from_version_id: Option<String>,
    /// The branch the version was first pushed to.
    pub pushed_branch: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// A sequence number: higher is newer.
    pub seq: i64,
}

/// A branch (movable) or a tag (immutable). Branches and tags share one namespace.
#[derive(Debug, Clone, Default)]
pub struct Ref {
    /// Container id.
    pub container_id: String,
    /// `branch` or `tag`.
    pub kind: String,
    /// Name (may contain `/`).
    pub name: String,
    /// The version it points at.
    pub version_id: String,
    /// Creation time.
    pub created_at: String,
    /// Last move.
    pub updated_at: String,
}

/// A stored change proposal.
#[derive(Debug, Clone, Default)]
pub struct Proposal {
    /// Id (`prop_…`).
    pub id: String,
    /// Container id.
    pub container_id: String,
    /// Title.
    pub title: String,
    /// Why.
    pub change_reason: String,
    /// The version the changes apply to.
    pub base_version_id: String,
    /// Branch it merges into.
    pub target_branch: String,
    /// Branch it comes from, if any.
    pub source_branch: Option<String>,
    /// The changes, canonical JSON array.
    pub changes: String,
    /// `OPEN`.
    pub status: String,
    /// Creation time.
    pub created_at: String,
}

/// A secret's public face: never its value.
#[derive(Debug, Clone, Default)]
pub struct SecretInfo {
    /// Name.
    pub key: String,
    /// First set.
    pub created_at: String,
    /// Last rotation.
    pub updated_at: String,
}

/// How `MetaStore::find_versions` selects READY versions (newest first).
#[derive(Debug, Clone)]
pub enum VersionFilter {
    /// Every READY version.
    Ready,
    /// READY versions with this `semanticVersion`.
    Semver(String),
    /// READY versions whose content hash starts with this lowercase hex prefix.
    HashPrefix(String),
}

/// What a finalize did to the branch.
#[derive(Debug, Clone)]
pub struct Finalized {
    /// The version, now READY.
    pub version: Version,
    /// The branch after the move.
    pub branch: Ref,
    /// The tip before the move, if the branch existed.
    pub previous_tip: Option<String>,
}

/// A wheel declared by `POST /versions` (`wheelFilename`, `wheelSha256`, …).
#[derive(Debug, Clone, Default)]
pub struct WheelDecl {
    /// The canonical wheel file name.
    pub filename: String,
    /// base64 of its raw sha256.
    pub sha256: String,
    /// Its size, when sent.
    pub size: Option<i64>,
    /// `requiresDist`, as canonical JSON.
    pub requires_dist: String,
}

// ------------------------------------------------------------------ decisions both back ends share

/// The compare-and-set decision shared by the back ends: `Ok(true)` = move/create.
pub fn cas_decision(
    slug_hint: &str,
    branch: &str,
    tip: Option<&Ref>,
    version_id: &str,
    base: Option<&str>,
    force: bool,
) -> StoreResult<()> {
    let Some(tip) = tip else { return Ok(()) };
    if tip.kind != "branch" {
        return Err(StoreError::Conflict(format!(
            "'{branch}' is a tag, and tags are immutable: push to a branch instead (--branch <name>)"
        )));
    }
    if force || tip.version_id == version_id || base == Some(tip.version_id.as_str()) {
        return Ok(());
    }
    let based_on = match base {
        Some(base) => format!("based on {base}"),
        None => "not based on any version (an ad-hoc directory)".to_string(),
    };
    Err(StoreError::Conflict(format!(
        "branch '{branch}' has moved: its tip is {tip_id} but this push is {based_on}. \
         Pull the tip (`gateway bench pull {slug_hint}@{branch}`) and re-apply your changes, \
         push to another branch with --branch <name>, or overwrite the tip with --force.",
        tip_id = tip.version_id
    )))
}

impl Version {
    /// A finalize needs the version's bundle stored.
    pub fn ensure_uploaded(&self) -> StoreResult<()> {
        if self.uploaded {
            return Ok(());
        }
        Err(StoreError::BadRequest(format!(
            "version {} has no uploaded bundle: PUT the tarball to the uploadUrl from POST /versions before finalizing",
            self.id
        )))
    }

    /// The lineage its first finalize records: the push's base, else the branch's
    /// previous tip; never the version itself.
    pub fn lineage(&self, base: Option<&str>, previous_tip: Option<&str>) -> Option<String> {
        base.or(previous_tip).filter(|parent| *parent != self.id).map(str::to_string)
    }

    /// The copy of this version a fork puts in `container_id` at `now`: READY, pushed to
    /// `main`, forked from this one.
    pub fn fork_copy(&self, container_id: &str, now: &str) -> Version {
        Version {
            id: crate::util::new_id("ver_"),
            container_id: container_id.to_string(),
            state: "READY".into(),
            forked_from_version_id: Some(self.id.clone()),
            pushed_branch: Some("main".into()),
            created_at: now.to_string(),
            ..self.clone()
        }
    }
}

impl Ref {
    /// The refusal of a new ref named `name`, where this one already stands.
    pub fn name_taken(&self, name: &str) -> StoreError {
        StoreError::Conflict(format!(
            "a {} named '{name}' already exists (at {}){}",
            self.kind,
            self.version_id,
            if self.kind == "tag" { "; tags are immutable, pick another name" } else { "; pick another name" }
        ))
    }
}

/// The refusal of a fork into a slug its project already has.
pub fn fork_slug_taken(slug: &str) -> StoreError {
    StoreError::Conflict(format!("a container named '{slug}' already exists: fork into another slug with --into <slug>"))
}
