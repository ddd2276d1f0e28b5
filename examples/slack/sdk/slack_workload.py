"""The official slack_sdk client against a served Slack world: 16 calls an
integration makes (reads paged by cursor with slack_sdk's own iteration, creates,
updates, a delete, reactions, history newest first, errors). Prints one JSON
object: each call's name and whether it did what Slack does, and exits 1 when any
did not.

    python slack_workload.py http://127.0.0.1:PORT TOKEN
"""

import json
import sys
import traceback

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError


def refused(call, error_name):
    """The Slack error a call fails with: HTTP 200, ok false, the error's name."""
    try:
        call()
    except SlackApiError as error:
        assert error.response["ok"] is False and error.response["error"] == error_name, error.response.data
        return error.response.status_code
    raise AssertionError(f"the call succeeded; expected {error_name}")


def main(base_url, token):
    client = WebClient(token=token, base_url=base_url.rstrip("/") + "/api/")
    results = []

    def check(name, call):
        try:
            detail = call()
            results.append({"call": name, "ok": True, "detail": detail})
        except Exception as error:  # noqa: BLE001 - each call's failure is reported, not raised
            results.append({"call": name, "ok": False, "error": f"{type(error).__name__}: {error}",
                            "trace": traceback.format_exc(limit=3)})

    def auth_test():
        answer = client.auth_test()
        assert answer["ok"] and answer["user_id"] == "U0ACMEBOT" and answer["team_id"] == "T0ACME001", answer.data
        return answer["user"]

    def users_list_paged():
        pages = [page["members"] for page in client.users_list(limit=2)]  # follows response_metadata.next_cursor
        names = [user["name"] for page in pages for user in page]
        assert [len(page) for page in pages] == [2, 2, 1], [len(page) for page in pages]
        assert names == ["ada", "grace", "alan", "katherine", "gateway-bot"], names
        return names

    def users_info():
        user = client.users_info(user="U0ACME002")["user"]
        assert user["real_name"] == "Grace Hopper" and user["profile"]["display_name"] == "grace", user
        return user["id"]

    def users_info_missing():
        return refused(lambda: client.users_info(user="U0NOBODY"), "user_not_found")

    def users_lookup_by_email():
        user = client.users_lookupByEmail(email="alan@acme.example")["user"]
        assert user["id"] == "U0ACME003", user
        return user["id"]

    def conversations_list_paged():
        names = []
        for page in client.conversations_list(limit=2):
            names += [channel["name"] for channel in page["channels"]]
            last_cursor = page["response_metadata"]["next_cursor"]
        assert names == ["general", "random", "engineering", "design", "old-launch"], names
        assert last_cursor == "", last_cursor
        return names

    def conversations_info():
        channel = client.conversations_info(channel="C0ACME003")["channel"]
        assert channel["name"] == "engineering" and channel["topic"]["value"] == "Deploys on Thursdays", channel
        refused(lambda: client.conversations_info(channel="C0NOWHERE"), "channel_not_found")
        return channel["id"]

    created = {}

    def conversations_create():
        channel = client.conversations_create(name="launch-plans")["channel"]
        assert channel["id"].startswith("C") and channel["name"] == "launch-plans" and not channel["is_private"], channel
        created["channel"] = channel["id"]
        again = client.conversations_info(channel=channel["id"])["channel"]
        assert again["name_normalized"] == "launch-plans", again
        return channel["id"]

    def conversations_create_taken():
        return refused(lambda: client.conversations_create(name="general"), "name_taken")

    def post_message():
        channel = created["channel"]
        first = client.chat_postMessage(channel=channel, text="Kick-off on Monday")
        second = client.chat_postMessage(channel=channel, text="Agenda to follow")
        third = client.chat_postMessage(channel=channel, text="Typo: agneda")
        for answer in (first, second, third):
            assert answer["ok"] and answer["channel"] == channel and answer["message"]["ts"] == answer["ts"], answer.data
        assert first["ts"] < second["ts"] < third["ts"], (first["ts"], second["ts"], third["ts"])
        created["messages"] = [first["ts"], second["ts"], third["ts"]]
        return created["messages"]

    def post_message_to_missing_channel():
        return refused(lambda: client.chat_postMessage(channel="C0NOWHERE", text="hello?"), "channel_not_found")

    def conversations_history():
        channel = created["channel"]
        first = client.conversations_history(channel=channel, limit=2)
        assert [m["text"] for m in first["messages"]] == ["Typo: agneda", "Agenda to follow"], first["messages"]
        assert first["has_more"] is True, first.data
        rest = client.conversations_history(channel=channel, limit=2, cursor=first["response_metadata"]["next_cursor"])
        assert [m["text"] for m in rest["messages"]] == ["Kick-off on Monday"] and rest["has_more"] is False, rest.data
        general = [m["ts"] for page in client.conversations_history(channel="C0ACME001", limit=3) for m in page["messages"]]
        assert general == sorted(general, reverse=True) and len(general) == 5, general
        return len(general)

    def chat_update():
        channel, ts = created["channel"], created["messages"][2]
        answer = client.chat_update(channel=channel, ts=ts, text="Typo: agenda")
        assert answer["text"] == "Typo: agenda" and answer["ts"] == ts and answer["message"]["text"] == "Typo: agenda", answer.data
        newest = client.conversations_history(channel=channel, limit=1)["messages"][0]
        assert newest["text"] == "Typo: agenda", newest
        refused(lambda: client.chat_update(channel=channel, ts="1000000000.000001", text="x"), "message_not_found")
        return ts

    def reactions_add():
        channel, ts = created["channel"], created["messages"][0]
        assert client.reactions_add(channel=channel, name="rocket", timestamp=ts)["ok"]
        refused(lambda: client.reactions_add(channel=channel, name="rocket", timestamp=ts), "already_reacted")
        refused(lambda: client.reactions_add(channel=channel, name="rocket", timestamp="1000000000.000001"), "message_not_found")
        return "rocket"

    def chat_delete():
        channel, ts = created["channel"], created["messages"][1]
        answer = client.chat_delete(channel=channel, ts=ts)
        assert answer["ok"] and answer["channel"] == channel and answer["ts"] == ts, answer.data
        left = [m["ts"] for m in client.conversations_history(channel=channel)["messages"]]
        assert ts not in left and len(left) == 2, left
        refused(lambda: client.chat_delete(channel=channel, ts=ts), "message_not_found")
        return ts

    def bad_token():
        return refused(lambda: WebClient(token="xoxb-not-the-token", base_url=client.base_url).auth_test(), "invalid_auth")

    def unknown_method():
        status = None
        try:
            client.api_call("chat.fly")
        except SlackApiError as error:
            assert error.response["error"] == "unknown_method", error.response.data
            status = error.response.status_code
        assert status == 404, status
        return status

    for name, call in [
        ("auth_test", auth_test), ("users_list_paged", users_list_paged), ("users_info", users_info),
        ("users_info_missing", users_info_missing), ("users_lookup_by_email", users_lookup_by_email),
        ("conversations_list_paged", conversations_list_paged), ("conversations_info", conversations_info),
        ("conversations_create", conversations_create), ("conversations_create_taken", conversations_create_taken),
        ("post_message", post_message), ("post_message_to_missing_channel", post_message_to_missing_channel),
        ("conversations_history", conversations_history), ("chat_update", chat_update),
        ("reactions_add", reactions_add), ("chat_delete", chat_delete), ("bad_token", bad_token),
        ("unknown_method", unknown_method),
    ]:
        check(name, call)
    passed = sum(1 for r in results if r["ok"])
    print(json.dumps({"sdk": "slack_sdk", "calls": len(results), "passed": passed, "results": results}, indent=1))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
