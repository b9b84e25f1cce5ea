"""The LLM judge: order alternation cancels position bias; selection and score reports; the command."""

from __future__ import annotations

import json

from fake_openai_server import Reply
from typer.testing import CliRunner

from hyperfolio.cli import app
from hyperfolio.eval.judge import CRITERIA, SELECTION, Judge, ScoreReply, SelectionReply, judge_answers


class ScriptedJudge:
    """A structured chat model that decides by a rule over the prompt it is shown."""

    def __init__(self, rule) -> None:
        self.rule = rule
        self.prompts: list[str] = []

    def complete_json(self, messages, model_type, stage=None, **params):
        user = messages[-1]["content"]
        self.prompts.append(user)
        if model_type is ScoreReply:
            return ScoreReply.model_validate(dict.fromkeys(CRITERIA, 80 if "detailed" in user else 40))
        winner = self.rule(user)
        return SelectionReply.model_validate({name: {"winner": winner, "reason": "r"} for name in SELECTION})


def first_is(word: str):
    return lambda user: 1 if word in user.split("Answer 2:")[0] else 2


def test_a_better_answer_wins_in_both_orders_and_position_bias_cancels():
    items = [("What is the capacity?", "A detailed answer: 8,500 TEU [1].", "Not sure."), ("Q2", "detailed", "short")]
    fair = ScriptedJudge(first_is("detailed"))
    report = judge_answers(Judge(fair), ("topdown", "bm25"), items)
    assert report.win_rate == dict.fromkeys(SELECTION, 1.0)
    # Each pair was shown twice, the answers' order swapped.
    assert len(fair.prompts) == 4
    assert fair.prompts[0].index("A detailed answer") < fair.prompts[0].index("Not sure.")
    assert fair.prompts[1].index("Not sure.") < fair.prompts[1].index("A detailed answer")
    biased = judge_answers(Judge(ScriptedJudge(lambda user: 1)), ("topdown", "bm25"), items)
    assert biased.win_rate == dict.fromkeys(SELECTION, 0.5)  # always "the first one": no net preference
    scored = judge_answers(Judge(ScriptedJudge(first_is("detailed"))), ("topdown", "bm25"), items, scores=True)
    assert scored.scores["topdown"]["clarity"] == 80 and scored.scores["bm25"]["clarity"] == 40
    assert "| overall | 100.0% | 0.0% |" in scored.markdown()


def test_judge_command_over_http(tmp_path, llm_server):
    doc = tmp_path / "fleet.md"
    doc.write_text("# Fleet\n\nThe Aurora carries 8,500 TEU. The Borealis carries 9,200 TEU.\n")
    data = tmp_path / "qa.jsonl"
    data.write_text(json.dumps({"question": "What does the Aurora carry?", "answer": "8,500 TEU", "doc": "fleet.md"}))
    collection = tmp_path / "col"
    collection.mkdir()
    (collection / "settings.toml").write_text(
        f'[models]\nbase_url = "{llm_server.url}"\njudge_model = "fake-judge"\nmax_retries = 0\n'
    )
    seen: list[str] = []

    def judge(request: dict) -> Reply:
        user = request["messages"][-1]["content"]
        seen.append(user)
        return Reply.json({name: {"winner": 1, "reason": "first"} for name in SELECTION})

    llm_server.handler = judge
    result = CliRunner().invoke(
        app,
        [
            "judge",
            "--strategies",
            "bm25,dense",
            "--dataset",
            f"jsonl:{data}",
            "--collection",
            str(collection),
            "--out",
            str(tmp_path / "out"),
            "--limit",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    # Two passes; when both strategies give the same answer the second is served from the reply cache.
    assert 1 <= len(seen) <= 2 and "What does the Aurora carry?" in seen[0]
    report = json.loads((tmp_path / "out" / "judge-qa-bm25-vs-dense.json").read_text())
    assert report["judged"] == 1 and report["win_rate"]["overall"] == 0.5


def test_judge_without_a_model_names_the_setting_with_its_section(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no user settings
    (tmp_path / "fleet.md").write_text("# Fleet\n\nThe Aurora carries 8,500 TEU.\n")
    data = tmp_path / "qa.jsonl"
    data.write_text(json.dumps({"question": "What does the Aurora carry?", "answer": "8,500 TEU", "doc": "fleet.md"}))
    args = ["judge", "--strategies", "bm25,dense", "--dataset", f"jsonl:{data}", "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert "set [models] judge_model (or model)" in " ".join(result.output.split()), result.output
