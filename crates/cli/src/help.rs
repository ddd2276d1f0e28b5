//! The help texts beyond clap's: every command's examples and its "Exit status:"
//! section, attached to the command tree by [`decorate`] from one table, so `--help`
//! teaches how a command is used and what its exit status means. The statuses are the
//! names of [`crate::exit::Status`].

use crate::exit::{section, Status};
use clap::Command;

/// One command's examples and exit statuses.
struct Doc {
    /// The subcommand path below `gateway` (`worlds data import`).
    path: &'static str,
    /// Command lines, each optionally followed by `  # what it does`.
    examples: &'static [&'static str],
    exit: &'static [(Status, &'static str)],
}

const OK: Status = Status::OK;
const FAILED: Status = Status::FAILED;
const USAGE: Status = Status::USAGE;

/// A command answered from the hub: done, refused, usage.
const HUB: &[(Status, &str)] =
    &[(OK, "done; the answer is printed"), (FAILED, "the hub refused, or could not be reached"), (USAGE, "a usage error")];
/// An offline schema command: its JSON envelope on stdout either way.
const SCHEMA: &[(Status, &str)] = &[
    (OK, r#"{"status": "ok", …} printed"#),
    (FAILED, r#"refused: {"status": "rejected", "error": {…}} printed"#),
    (USAGE, "a usage error"),
];
/// A local command that prints or writes files.
const LOCAL: &[(Status, &str)] = &[(OK, "done"), (FAILED, "refused: the reason on stderr"), (USAGE, "a usage error")];
/// A server that runs until it is stopped.
const SERVER: &[(Status, &str)] =
    &[(OK, "stopped by Ctrl-C or SIGTERM after finishing what was in flight"), (FAILED, "it could not start"), (USAGE, "a usage error")];
/// Rows checked.
const ROWS: &[(Status, &str)] = &[
    (OK, "every row accepted"),
    (FAILED, "an error: the world, a file or the hub could not be read"),
    (Status::ROWS_REFUSED, "at least one row refused (the refusals are printed; --report writes them all)"),
];
/// A run graded against a bar.
const GATED: &[(Status, &str)] = &[
    (OK, "done, and the reward is at or above --fail-under (when given)"),
    (Status::UNDER_BAR, "the reward landed under --fail-under, or the run failed"),
    (USAGE, "a usage error"),
];

/// Every command's help, by path. `decorate` refuses (in tests) a command without one.
const DOCS: &[Doc] = &[
    // ---------------------------------------------------------------- worlds schema
    Doc {
        path: "worlds schema init",
        examples: &[
            "gateway worlds schema init ./acme --name acme            # the blank contract, with a starter connector.toml",
            "gateway worlds schema init ./desk --connector zendesk    # from a built-in template",
            "gateway worlds schema init ./crm --connector workspace:crm-base",
        ],
        exit: &[
            (OK, r#"{"status": "ok", "domain": …} printed"#),
            (FAILED, r#"refused: {"status": "rejected", "error": {…}} printed"#),
            (USAGE, "a usage error, or an unknown template"),
        ],
    },
    Doc {
        path: "worlds schema templates",
        examples: &["gateway worlds schema templates"],
        exit: &[(OK, "the template slugs printed, one a line")],
    },
    Doc {
        path: "worlds schema compile",
        examples: &["gateway worlds schema compile ./acme   # writes the artifacts and db/state.sqlite"],
        exit: SCHEMA,
    },
    Doc { path: "worlds schema check", examples: &["gateway worlds schema check ./acme   # in CI: nothing stale"], exit: SCHEMA },
    Doc { path: "worlds schema describe", examples: &["gateway worlds schema describe ./acme | less"], exit: SCHEMA },
    Doc {
        path: "worlds schema api-bundle",
        examples: &[
            "gateway worlds schema api-bundle ./acme --out ./bundle",
            "gateway worlds schema api-bundle ./acme --out ./bundle --binary link   # no 100 MB copy",
        ],
        exit: &[(OK, "the bundle written; its path printed"), (FAILED, "refused: the reason on stderr"), (USAGE, "a usage error")],
    },
    Doc {
        path: "worlds schema entity add",
        examples: &[
            "gateway worlds schema entity add ./acme customers --fields 'id:string,email:string,plan:string?' --key id",
            "gateway worlds schema entity add ./acme tickets --ref Ticket --key id --relationship customer_id->customers",
        ],
        exit: SCHEMA,
    },
    // ---------------------------------------------------------------- worlds
    Doc {
        path: "worlds serve",
        examples: &[
            "gateway worlds serve ./acme                        # http://127.0.0.1:8080",
            "gateway worlds serve ./acme --port 0 --state ./acme-state",
            "gateway worlds serve ./acme --bind 0.0.0.0 --admin-key s3cret",
        ],
        exit: SERVER,
    },
    Doc {
        path: "worlds mcp",
        examples: &["gateway worlds mcp ./acme", "gateway worlds mcp ./acme --task-file task.json --controls"],
        exit: &[(OK, "stdin closed"), (FAILED, "the world or the task was refused"), (USAGE, "a usage error")],
    },
    Doc {
        path: "worlds skill",
        examples: &["gateway worlds skill --list", "gateway worlds skill world-data-ingestion", "gateway worlds skill --install ."],
        exit: LOCAL,
    },
    Doc {
        path: "worlds run",
        examples: &[
            "gateway worlds run acme@main -a oracle                 # each task's reference solution",
            "gateway worlds run --path ./acme -a agent.py --no-file",
            "gateway worlds run acme -a builtin -m openai/gpt-4o-mini --all-tasks --fail-under 0.8",
            "gateway worlds run acme -a oracle --task-id wt_123@2 --task-set smoke   # stored tasks",
        ],
        exit: GATED,
    },
    Doc {
        path: "worlds ci",
        examples: &[
            "gateway worlds ci --path ./acme -a oracle",
            "gateway worlds ci -m openai/gpt-4o-mini --fail-under 0.7",
            "gateway worlds ci -m openai/gpt-4o-mini -r 8 --baseline ev_main   # fail only on a real regression",
        ],
        exit: GATED,
    },
    // ---------------------------------------------------------------- worlds data
    Doc {
        path: "worlds data show",
        examples: &["gateway worlds data show ./acme", "gateway worlds data show acme@main --entity customers"],
        exit: &[(OK, "counts or rows printed"), (FAILED, "refused: the reason on stderr"), (USAGE, "a usage error")],
    },
    Doc {
        path: "worlds data import",
        examples: &[
            "gateway worlds data import ./acme customers.json --mode append",
            "gateway worlds data import acme export.jsonl --entity customers --chunk-bytes 64MiB -m 'Q3 customers'",
            "gateway worlds data import acme big.jsonl.gz --publish later --no-wait",
        ],
        exit: &[
            (OK, "applied (or published); with --no-wait, uploaded"),
            (FAILED, "an error, or a bad --mode/--merge/--publish"),
            (Status::ROWS_REFUSED, "the batch (or, --dry-run, a row) was refused; --report writes the refusals"),
        ],
    },
    Doc {
        path: "worlds data check",
        examples: &["gateway worlds data check ./acme rows.jsonl", "gateway worlds data check acme export.jsonl --report refusals.jsonl"],
        exit: ROWS,
    },
    Doc {
        path: "worlds data extract",
        examples: &[
            "gateway worlds data extract ./acme tools.jsonl --shape tool-results --entity customers --out rows.jsonl",
            "gateway worlds session export SID | gateway worlds data extract ./acme - --shape session-export --entity tickets",
        ],
        exit: &[(OK, "rows written; the summary on stderr"), (FAILED, "refused: the reason on stderr"), (USAGE, "a usage error")],
    },
    Doc {
        path: "worlds data status",
        examples: &["gateway worlds data status db_0123abcd", "gateway worlds data status db_0123abcd --world acme"],
        exit: HUB,
    },
    Doc { path: "worlds data batches", examples: &["gateway worlds data batches acme --limit 5"], exit: HUB },
    Doc { path: "worlds data publish", examples: &["gateway worlds data publish acme -m 'nightly rows'"], exit: HUB },
    // ---------------------------------------------------------------- worlds connector
    Doc { path: "worlds connector validate", examples: &["gateway worlds connector validate ./acme"], exit: LOCAL },
    Doc {
        path: "worlds connector capture",
        examples: &[
            "ACME_TOKEN=… gateway worlds connector capture ./acme --op list_customers --param limit=100",
            "gateway worlds connector capture ./acme --op get_customer --arg id=c_1 --remote",
        ],
        exit: LOCAL,
    },
    Doc {
        path: "worlds connector ingest",
        examples: &["gateway worlds connector ingest ./acme", "gateway worlds connector ingest ./acme --batch-id acme.initial.v2"],
        exit: LOCAL,
    },
    Doc {
        path: "worlds connector conform",
        examples: &["gateway worlds connector conform ./acme --openapi vendor-openapi.yaml --out conform.json"],
        exit: &[
            (OK, "every documented operation conforms"),
            (
                FAILED,
                "an operation does not conform (status, body, query, header, error answer, path argument), nothing was checked, or refused",
            ),
            (USAGE, "a usage error"),
        ],
    },
    Doc {
        path: "worlds connector route add",
        examples: &[
            "gateway worlds connector route add ./acme list_customers --path /v1/customers --entity customers --results data",
            "gateway worlds connector route add ./acme create_customer -X POST --path /v1/customers --entity customers --action create",
        ],
        exit: SCHEMA,
    },
    Doc {
        path: "worlds connector publish",
        examples: &["gateway worlds connector publish ./acme -m 'add tickets'", "gateway worlds connector publish ./acme --tag v1"],
        exit: HUB,
    },
    Doc {
        path: "worlds connector list",
        examples: &["gateway worlds connector list", "gateway worlds connector list --hub --query crm"],
        exit: HUB,
    },
    Doc {
        path: "worlds connector pull",
        examples: &["gateway worlds connector pull crm-base", "gateway worlds connector pull crm-base --version v1 --out ./crm"],
        exit: HUB,
    },
    Doc { path: "worlds connector clone", examples: &["gateway worlds connector clone crm-base --slug my-crm"], exit: HUB },
    Doc {
        path: "worlds connector skill",
        examples: &["gateway worlds connector skill", "gateway worlds connector skill --install ."],
        exit: LOCAL,
    },
    // ---------------------------------------------------------------- worlds session
    Doc {
        path: "worlds session open",
        examples: &[
            "gateway worlds session open acme --task default",
            "gateway worlds session open acme@main --task-file task.json -s api",
            "gateway worlds session open acme --task-id wt_123 --task-version 2 --no-wait",
        ],
        exit: &[
            (OK, "the session's descriptor printed"),
            (FAILED, "refused, or not ready in time (its descriptor is printed: poll `session status`)"),
            (USAGE, "a usage error (one task source is needed)"),
        ],
    },
    Doc {
        path: "worlds session fork",
        examples: &[
            "gateway worlds session fork SID",
            "FORK=$(gateway worlds session fork SID | jq -r .sessionId)   # try a what-if, then close it",
        ],
        exit: &[
            (OK, "the fork's descriptor printed (as `session open` prints one, with forkedFrom)"),
            (FAILED, "refused: the session is not live, the project's session quota is full, or its host cannot take the fork"),
            (USAGE, "a usage error"),
        ],
    },
    Doc { path: "worlds session status", examples: &["gateway worlds session status SID"], exit: HUB },
    Doc { path: "worlds session state", examples: &["gateway worlds session state SID > state.json"], exit: HUB },
    Doc { path: "worlds session reset", examples: &["gateway worlds session reset SID"], exit: HUB },
    Doc {
        path: "worlds session grade",
        examples: &["gateway worlds session grade SID", "gateway worlds session grade SID --timeout 60"],
        exit: HUB,
    },
    Doc {
        path: "worlds session browse",
        examples: &["gateway worlds session browse SID --mode hosted"],
        exit: &[(FAILED, "always: this build does not drive a browser (it checks the surfaces first)"), (USAGE, "a usage error")],
    },
    Doc {
        path: "worlds session close",
        examples: &["gateway worlds session close SID", "gateway worlds session close SID --keep-warm"],
        exit: HUB,
    },
    Doc {
        path: "worlds session seed",
        examples: &[
            "gateway worlds session seed SID rows.json",
            "gateway worlds session seed SID customers.jsonl --entity customers --mode replace",
        ],
        exit: HUB,
    },
    Doc {
        path: "worlds session export",
        examples: &["gateway worlds session export SID > calls.jsonl", "gateway worlds session export SID --out calls.jsonl"],
        exit: HUB,
    },
    Doc {
        path: "worlds session task save",
        examples: &["gateway worlds session task save SID --name refund-flow -m 'first cut'"],
        exit: HUB,
    },
    // ---------------------------------------------------------------- worlds task
    Doc {
        path: "worlds task create",
        examples: &[
            "gateway worlds task create task.json --world acme -m 'v1'",
            "gateway worlds task create examples/helpdesk/tasks/solve-101.json --world helpdesk   # a spec: instruction, grader (assertions | python | rubric), tools, metadata",
        ],
        exit: HUB,
    },
    Doc {
        path: "worlds task update",
        examples: &[
            "gateway worlds task update wt_123 --spec task.json -m 'tighter grader'",
            "gateway worlds task update wt_123 --no-world",
        ],
        exit: HUB,
    },
    Doc {
        path: "worlds task list",
        examples: &["gateway worlds task list --world acme", "gateway worlds task list --metadata difficulty=hard --limit 20"],
        exit: HUB,
    },
    Doc {
        path: "worlds task show",
        examples: &["gateway worlds task show wt_123", "gateway worlds task show wt_123 --version 1"],
        exit: HUB,
    },
    Doc {
        path: "worlds task validate",
        examples: &["gateway worlds task validate wt_123 --world acme", "gateway worlds task validate task.json --path ./acme   # offline"],
        exit: &[(OK, "the task fits"), (FAILED, "it does not (the problems are printed), or refused"), (USAGE, "a usage error")],
    },
    Doc {
        path: "worlds task grade",
        examples: &["gateway worlds task grade task.json --state state.json"],
        exit: &[
            (OK, r#"{"reward": R, "rewards": {…}} printed"#),
            (FAILED, r#"refused: {"status": "rejected", "error": {…}} printed"#),
            (USAGE, "a usage error"),
        ],
    },
    Doc { path: "worlds task delete", examples: &["gateway worlds task delete wt_123"], exit: HUB },
    // ---------------------------------------------------------------- bench
    Doc {
        path: "bench push",
        examples: &[
            "gateway bench push ./acme -m 'tighten the grader'",
            "gateway bench push ./acme --branch wip-alice",
            "gateway bench push ./acme --auto-bump --build-wheel",
        ],
        exit: HUB,
    },
    Doc { path: "bench pull", examples: &["gateway bench pull acme", "gateway bench pull acme@1.2.0 --target ./acme-1.2"], exit: HUB },
    Doc {
        path: "bench checkout",
        examples: &["gateway bench checkout acme@wip-alice", "gateway bench checkout acme@v1.0.0 -t ./acme-v1"],
        exit: HUB,
    },
    Doc { path: "bench status", examples: &["gateway bench status", "gateway bench status ./acme"], exit: HUB },
    Doc { path: "bench log", examples: &["gateway bench log acme", "gateway bench log acme --branch wip-alice -n 50"], exit: HUB },
    Doc {
        path: "bench branch",
        examples: &[
            "gateway bench branch                 # list; the current one marked *",
            "gateway bench branch wip-alice       # from the main tip",
        ],
        exit: HUB,
    },
    Doc { path: "bench tag", examples: &["gateway bench tag v1.0.0", "gateway bench tag baseline --version VERSION_ID"], exit: HUB },
    Doc { path: "bench fork", examples: &["gateway bench fork acme --into acme-v2"], exit: HUB },
    Doc { path: "bench diff", examples: &["gateway bench diff BASE_VERSION_ID HEAD_VERSION_ID"], exit: HUB },
    Doc {
        path: "bench propose",
        examples: &["gateway bench propose --title 'Harden the grader' -m 'null checks were missing'"],
        exit: HUB,
    },
    Doc {
        path: "bench secrets",
        examples: &[
            "gateway bench secrets list --env acme",
            "printf %s \"$TOKEN\" | gateway bench secrets set --env acme --key ACME_TOKEN",
            "gateway bench secrets unset --env acme --key ACME_TOKEN",
        ],
        exit: HUB,
    },
    Doc {
        path: "bench install",
        examples: &["gateway bench install acme@1.2.0", "gateway bench install acme --tool pip --no-upgrade"],
        exit: HUB,
    },
    Doc {
        path: "bench eval",
        examples: &[
            "gateway bench eval acme@main -m openai/gpt-4o-mini -n 5",
            "gateway bench eval --path ./acme -m openai/gpt-4o-mini --fail-under 0.8",
        ],
        exit: GATED,
    },
    Doc {
        path: "bench harvest-harbor",
        examples: &["gateway bench harvest-harbor ./jobs/2024-06-01 acme@main -m openai/gpt-4o-mini"],
        exit: HUB,
    },
    Doc {
        path: "bench dispatch",
        examples: &["gateway bench dispatch RUN_CONFIG_ID", "gateway bench dispatch RUN_CONFIG_ID --version-id VERSION_ID"],
        exit: &[
            (OK, "every model started"),
            (FAILED, "a model did not start (the reason on stderr), or refused"),
            (USAGE, "a usage error"),
        ],
    },
    Doc {
        path: "bench run-configs",
        examples: &[
            "gateway bench run-configs",
            "gateway bench run-configs create --name nightly --models a,b --auto-run-on-push",
            "gateway bench run-configs delete --id ID",
        ],
        exit: HUB,
    },
    // ---------------------------------------------------------------- environment
    Doc { path: "environment list", examples: &["gateway environment list", "gateway environment list --slug acme"], exit: HUB },
    Doc { path: "environment get", examples: &["gateway environment get CONTAINER_ID"], exit: HUB },
    Doc { path: "environment tasks", examples: &["gateway environment tasks CONTAINER_ID"], exit: HUB },
    Doc {
        path: "environment run",
        examples: &[
            "gateway environment run acme -m openrouter/z-ai/glm-4.6",
            "gateway environment run acme -m MODEL_A -m MODEL_B --no-wait",
        ],
        exit: &[
            (OK, "dispatched, and (waiting) every run completed"),
            (FAILED, "nothing dispatched, a run failed or is still going at --wait-timeout, or refused"),
            (USAGE, "a usage error"),
        ],
    },
    Doc { path: "environment run-status", examples: &["gateway environment run-status RUN_ID --wait 30"], exit: HUB },
    Doc {
        path: "environment link-task-set",
        examples: &["gateway environment link-task-set acme --tasks tasks.jsonl", "gateway environment link-task-set acme --detach"],
        exit: HUB,
    },
    Doc { path: "environment performance", examples: &["gateway environment performance CONTAINER_ID"], exit: HUB },
    Doc { path: "environment rollouts", examples: &["gateway environment rollouts CONTAINER_ID"], exit: HUB },
    Doc { path: "environment samples", examples: &["gateway environment samples CONTAINER_ID EVALUATION_ID -n 20"], exit: HUB },
    Doc {
        path: "environment regrade",
        examples: &["gateway environment regrade EVALUATION_ID --task-version 2", "gateway environment regrade EVALUATION_ID --task-version 3 --task-id wt_123 --json"],
        exit: HUB,
    },
    Doc {
        path: "environment create-task",
        examples: &["gateway environment create-task DATASET_ID --name refund --prompt 'Refund order 42'"],
        exit: HUB,
    },
    Doc { path: "environment agent-status", examples: &["gateway environment agent-status"], exit: HUB },
    Doc { path: "environment agent-trigger", examples: &["gateway environment agent-trigger"], exit: HUB },
    // ---------------------------------------------------------------- hub, host, auth
    Doc {
        path: "hub serve",
        examples: &[
            "gateway hub serve",
            "gateway hub serve --addr 0.0.0.0:8090 --database postgres://hub@db/hub --objects s3://bucket/hub",
            "gateway hub serve --capture-allow api.acme.com,login.acme.com",
        ],
        exit: SERVER,
    },
    Doc { path: "hub keys create", examples: &["gateway hub keys create --project acme"], exit: LOCAL },
    Doc { path: "hub hosts add", examples: &["gateway hub hosts add gpu-1", "gateway hub hosts add gpu-1 --data /srv/hub"], exit: LOCAL },
    Doc { path: "hub hosts list", examples: &["gateway hub hosts list"], exit: LOCAL },
    Doc { path: "hub hosts revoke", examples: &["gateway hub hosts revoke gpu-1"], exit: LOCAL },
    Doc {
        path: "host serve",
        examples: &[
            "WORLDS_HOST_SECRET=ghc-gpu-1.… gateway host serve --addr 0.0.0.0:8080 --platform http://hub:8090 --advertise http://10.0.0.5:8080",
        ],
        exit: &[(OK, "drained after SIGTERM"), (FAILED, "it could not start (no --secret, a busy port)"), (USAGE, "a usage error")],
    },
    Doc {
        path: "auth login",
        examples: &["gateway auth login", "gateway auth login --host https://hub.example --public-key pk-lf-… --api-key sk-lf-…"],
        exit: LOCAL,
    },
    Doc { path: "auth logout", examples: &["gateway auth logout"], exit: LOCAL },
    Doc { path: "auth status", examples: &["gateway auth status"], exit: &[(OK, "the stored host and whether a key is set")] },
    // ---------------------------------------------------------------- agents platform
    Doc {
        path: "deploy",
        examples: &[
            "gateway deploy --tag myagent:v1               # build, push and register",
            "gateway deploy registry/myagent:v1 --skip-build",
            "gateway deploy --dry-run",
        ],
        exit: HUB,
    },
    Doc {
        path: "init",
        examples: &["gateway init --agent crm_agent:crm_agent", "gateway init --agent my_agent:agent --name my-agent -o ./agent"],
        exit: LOCAL,
    },
    Doc { path: "algorithm list", examples: &["gateway algorithm list"], exit: LOCAL },
    Doc { path: "algorithm new", examples: &["gateway algorithm new my_algo --output-dir ./algorithms"], exit: LOCAL },
    Doc {
        path: "secret set",
        examples: &[
            "gateway secret set TAVILY_API_KEY              # prompts for the value",
            "gateway secret set SEARCH_KEY -v … --scope both -d 'search'",
        ],
        exit: HUB,
    },
    Doc { path: "secret list", examples: &["gateway secret list"], exit: HUB },
    Doc { path: "secret delete", examples: &["gateway secret delete TAVILY_API_KEY"], exit: HUB },
    Doc { path: "agent list", examples: &["gateway agent list"], exit: HUB },
    Doc {
        path: "run start",
        examples: &["gateway run start gepa --agent AGENT_ID --dataset DATASET_ID --config '{\"budget\": 50}'"],
        exit: HUB,
    },
    Doc { path: "run verify", examples: &["gateway run verify gepa --agent AGENT_ID"], exit: HUB },
    Doc { path: "run list", examples: &["gateway run list", "gateway run list --source sdk --limit 5"], exit: HUB },
    Doc {
        path: "dataset upload",
        examples: &[
            "gateway dataset upload tasks.json --name crm-v1",
            "gateway dataset upload tasks.jsonl --name crm-v1 --agent crm-analyst",
        ],
        exit: HUB,
    },
    Doc {
        path: "release gate",
        examples: &[
            "gateway release gate --commit \"$GITHUB_SHA\" --wait",
            "gateway release gate --agent checkout-bot --version 2.4.0 --json",
        ],
        exit: &[
            (OK, "the build passes the gate"),
            (Status::BLOCKED, "the build is blocked, or the platform could not be reached"),
            (Status::UNTESTED, "untested, no such build, or a usage error"),
        ],
    },
    Doc {
        path: "completion",
        examples: &[
            "gateway completion bash > ~/.local/share/bash-completion/completions/gateway",
            "gateway completion zsh > \"${fpath[1]}/_gateway\"",
        ],
        exit: &[(OK, "the script printed"), (USAGE, "an unknown shell")],
    },
];

/// The "Examples:" and "Exit status:" text of one command.
fn after_help(doc: &Doc) -> String {
    let mut text = String::from("Examples:");
    for example in doc.examples {
        text.push_str("\n  ");
        text.push_str(example);
    }
    text.push_str("\n\n");
    text.push_str(&section(doc.exit));
    text
}

fn doc(path: &str) -> Option<&'static Doc> {
    DOCS.iter().find(|doc| doc.path == path)
}

/// The command tree with every command's examples and exit statuses attached.
pub fn decorate(command: Command) -> Command {
    decorate_under(command, "")
}

fn decorate_under(command: Command, parent: &str) -> Command {
    let names: Vec<String> = command.get_subcommands().map(|sub| sub.get_name().to_string()).collect();
    let mut command = command;
    for name in names {
        let path = if parent.is_empty() { name.clone() } else { format!("{parent} {name}") };
        command = command.mut_subcommand(&name, |sub| {
            let sub = match doc(&path) {
                Some(doc) => sub.after_help(after_help(doc)),
                None => sub,
            };
            decorate_under(sub, &path)
        });
    }
    command
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every leaf command of `root`, by path.
    pub(crate) fn leaves(command: &Command, parent: &str, out: &mut Vec<String>) {
        for sub in command.get_subcommands() {
            let path = if parent.is_empty() { sub.get_name().to_string() } else { format!("{parent} {}", sub.get_name()) };
            if sub.has_subcommands() {
                leaves(sub, &path, out);
            } else {
                out.push(path);
            }
        }
    }

    /// Every command teaches: examples and exit statuses, and no entry names a
    /// command that is not there.
    #[test]
    fn every_command_has_examples_and_exit_statuses() {
        use clap::CommandFactory;
        let mut paths = Vec::new();
        leaves(&crate::Cli::command(), "", &mut paths);
        let missing: Vec<&String> = paths.iter().filter(|p| doc(p).is_none()).collect();
        assert!(missing.is_empty(), "no help examples for {missing:?}");
        let stale: Vec<&str> = DOCS.iter().map(|d| d.path).filter(|p| !paths.iter().any(|q| q == p)).collect();
        assert!(stale.is_empty(), "help for commands that do not exist: {stale:?}");
        for doc in DOCS {
            assert!(!doc.examples.is_empty() && !doc.exit.is_empty(), "{}", doc.path);
            assert!(doc.examples.iter().all(|e| e.contains("gateway ")), "{}", doc.path);
        }
    }
}
