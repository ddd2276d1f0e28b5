//! The closed sets of values flags take, as clap `ValueEnum`s, each mapped onto the
//! library's own enum (the libraries know nothing of clap). Their spellings are the
//! original's exactly.
//!
//! A bad value is refused while parsing. Where the original refused it with words
//! and an exit status of its own (it checked by hand), [`refusal`] gives those back,
//! so `gateway worlds data import … --mode x` still says what the original says and
//! exits 1; everywhere else clap's usage error (exit 2) names the choices.

use crate::exit::Status;
use clap::ValueEnum;

/// `--mode` of `data import|check`: how rows meet the world's. (`session seed --mode`
/// is read after the session answers, where the original checks it.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Upsert by primary key.
    Append,
    /// The named entities' rows are replaced.
    Replace,
}

impl From<Mode> for gateway_world::plan::Mode {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::Append => Self::Append,
            Mode::Replace => Self::Replace,
        }
    }
}

/// `--merge`: what a row repeating a key already in the batch does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Merge {
    /// The last row wins.
    Upsert,
    /// The first row wins; later ones add only the fields it lacks.
    Fill,
}

impl From<Merge> for gateway_world::check::Merge {
    fn from(merge: Merge) -> Self {
        match merge {
            Merge::Upsert => Self::Upsert,
            Merge::Fill => Self::Fill,
        }
    }
}

/// `data extract --shape`: what the input is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shape {
    /// Tool results: `{tool, result}` lines or documents.
    ToolResults,
    /// A vendor response: rows under the world's `[api].envelope`.
    VendorEnvelope,
    /// A session export (`worlds session export`).
    SessionExport,
}

impl From<Shape> for gateway_world::extract::Shape {
    fn from(shape: Shape) -> Self {
        match shape {
            Shape::ToolResults => Self::ToolResults,
            Shape::VendorEnvelope => Self::VendorEnvelope,
            Shape::SessionExport => Self::SessionExport,
        }
    }
}

/// `data import --publish`: when an applied batch becomes a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Publish {
    /// A data-only version per batch.
    Now,
    /// Fold applied batches later with `data publish`.
    Later,
}

impl From<Publish> for gateway_hub_client::world_data_client::Publish {
    fn from(publish: Publish) -> Self {
        match publish {
            Publish::Now => Self::Now,
            Publish::Later => Self::Later,
        }
    }
}

/// `session browse --mode`: where the UI opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Browse {
    /// The session's hosted browser.
    Hosted,
    /// A browser on this machine.
    Local,
    /// Hosted when there is one, else local.
    Auto,
}

impl From<Browse> for gateway_hub_client::sessions_client::BrowseMode {
    fn from(mode: Browse) -> Self {
        match mode {
            Browse::Hosted => Self::Hosted,
            Browse::Local => Self::Local,
            Browse::Auto => Self::Auto,
        }
    }
}

/// `bench eval --kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalKind {
    /// Pull the version and detect its kind.
    Auto,
    /// A verifiers package: its own rollout loop.
    Verifiers,
    /// A verifiers v1 package (refused: not supported).
    #[value(name = "verifiers-v1")]
    VerifiersV1,
    /// A harbor task tree, run under harbor.
    Harbor,
}

impl From<EvalKind> for gateway_runner::bench::EvalKind {
    fn from(kind: EvalKind) -> Self {
        match kind {
            EvalKind::Auto => Self::Auto,
            EvalKind::Verifiers => Self::Verifiers,
            EvalKind::VerifiersV1 => Self::VerifiersV1,
            EvalKind::Harbor => Self::Harbor,
        }
    }
}

/// `bench push --visibility`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Visibility {
    /// This project only.
    #[value(name = "PRIVATE")]
    Private,
    /// Everyone.
    #[value(name = "PUBLIC")]
    Public,
}

impl From<Visibility> for gateway_hub_client::client::Visibility {
    fn from(visibility: Visibility) -> Self {
        match visibility {
            Visibility::Private => Self::Private,
            Visibility::Public => Self::Public,
        }
    }
}

/// `bench install --tool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Installer {
    /// `uv pip install`.
    Uv,
    /// `pip install`.
    Pip,
}

impl From<Installer> for gateway_hub_client::client::Installer {
    fn from(tool: Installer) -> Self {
        match tool {
            Installer::Uv => Self::Uv,
            Installer::Pip => Self::Pip,
        }
    }
}

/// `bench secrets ACTION`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SecretsAction {
    /// Store or rotate a secret (--key, --value or stdin).
    Set,
    /// The secrets' names and when each was rotated.
    List,
    /// Delete a secret (--key).
    Unset,
}

/// `bench run-configs ACTION`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunConfigsAction {
    /// The project's run configs.
    List,
    /// Create (or, with --id, update) one.
    Create,
    /// Delete one (--id).
    Delete,
}

/// The original's own refusal of a bad value: its words and exit status. `command` is
/// the subcommand path (`worlds data import`), `arg` the argument as clap names it in
/// errors (`--mode <MODE>`, `<ACTION>`), `value` what was given.
pub fn refusal(command: &str, arg: &str, value: &str) -> Option<(String, Status)> {
    let flag = arg.split([' ', '=']).next().unwrap_or(arg);
    let said = |text: &str| Some((text.to_string(), Status::FAILED));
    match (command, flag) {
        ("worlds data import", "--mode" | "--merge" | "--publish") => {
            said("--mode is append|replace, --merge is upsert|fill, --publish is now|later")
        }
        // The engine's refusals, as `data check` and `data extract` print them.
        ("worlds data check", "--mode") => said("mode at /mode: mode must be append or replace"),
        ("worlds data check", "--merge") => said("merge at /merge: merge must be upsert or fill"),
        ("worlds data extract", "--shape") => said("extract at /shape: shape must be one of tool-results, vendor-envelope, session-export"),
        ("worlds data extract", "--merge") => said("extract at /merge: merge must be one of fill, upsert"),
        ("worlds session browse", "--mode") => said("mode must be 'auto', 'hosted' or 'local'"),
        ("bench eval", "--kind") => said(&format!("unknown --kind '{value}' (auto|verifiers|verifiers-v1|harbor)")),
        ("bench push", "--visibility") => {
            Some((format!("Error: Invalid value: --visibility must be PRIVATE or PUBLIC, not {value}"), Status::USAGE))
        }
        ("bench secrets", "<ACTION>") => Some(("Error: Invalid value: action must be one of: set | list | unset".into(), Status::USAGE)),
        ("bench run-configs", "[ACTION]" | "<ACTION>") => {
            Some(("Error: Invalid value: action must be one of: list | create | delete".into(), Status::USAGE))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spellings are the original's, every one.
    #[test]
    fn spellings() {
        let names = |values: &[clap::builder::PossibleValue]| values.iter().map(|v| v.get_name().to_string()).collect::<Vec<_>>();
        let of = |all: Vec<Option<clap::builder::PossibleValue>>| names(&all.into_iter().flatten().collect::<Vec<_>>());
        assert_eq!(of(Mode::value_variants().iter().map(|v| v.to_possible_value()).collect()), ["append", "replace"]);
        assert_eq!(of(Merge::value_variants().iter().map(|v| v.to_possible_value()).collect()), ["upsert", "fill"]);
        assert_eq!(
            of(Shape::value_variants().iter().map(|v| v.to_possible_value()).collect()),
            ["tool-results", "vendor-envelope", "session-export"]
        );
        assert_eq!(of(Publish::value_variants().iter().map(|v| v.to_possible_value()).collect()), ["now", "later"]);
        assert_eq!(of(Browse::value_variants().iter().map(|v| v.to_possible_value()).collect()), ["hosted", "local", "auto"]);
        assert_eq!(
            of(EvalKind::value_variants().iter().map(|v| v.to_possible_value()).collect()),
            ["auto", "verifiers", "verifiers-v1", "harbor"]
        );
        assert_eq!(of(Visibility::value_variants().iter().map(|v| v.to_possible_value()).collect()), ["PRIVATE", "PUBLIC"]);
        assert_eq!(of(Installer::value_variants().iter().map(|v| v.to_possible_value()).collect()), ["uv", "pip"]);
        assert_eq!(of(SecretsAction::value_variants().iter().map(|v| v.to_possible_value()).collect()), ["set", "list", "unset"]);
        assert_eq!(of(RunConfigsAction::value_variants().iter().map(|v| v.to_possible_value()).collect()), ["list", "create", "delete"]);
    }

    /// Library spellings agree with the CLI's.
    #[test]
    fn library_spellings() {
        for mode in Mode::value_variants() {
            assert_eq!(gateway_world::plan::Mode::from(*mode).as_str(), mode.to_possible_value().unwrap().get_name());
        }
        for merge in Merge::value_variants() {
            assert_eq!(gateway_world::check::Merge::from(*merge).as_str(), merge.to_possible_value().unwrap().get_name());
        }
        for shape in Shape::value_variants() {
            assert_eq!(gateway_world::extract::Shape::from(*shape).as_str(), shape.to_possible_value().unwrap().get_name());
        }
        for kind in EvalKind::value_variants() {
            assert_eq!(gateway_runner::bench::EvalKind::from(*kind).as_str(), kind.to_possible_value().unwrap().get_name());
        }
        for publish in Publish::value_variants() {
            assert_eq!(
                gateway_hub_client::world_data_client::Publish::from(*publish).as_str(),
                publish.to_possible_value().unwrap().get_name()
            );
        }
    }
}

/// `schema api-bundle --binary`: what the bundle's `server/` carries to run the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BundleBinary {
    /// A copy of this binary (the bundle needs nothing else).
    Copy,
    /// A symbolic link to this binary (small; the bundle runs where it was built).
    Link,
    /// No binary: the Dockerfile starts from the gateway image of this version.
    Image,
}
