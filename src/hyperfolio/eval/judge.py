"""LLM-judge evaluation (VizRAG appendix E, after the Hyper-RAG / LightRAG protocol).

Selection-based: for each question the judge sees two strategies' answers and picks the better
on Comprehensiveness, Empowerment, Relevance, Consistency, Clarity, Logical and Overall; every
pair is judged twice with the answers' order swapped, and the two verdicts are averaged, so a
judge's preference for the first (or second) position cancels out. Score-based: each answer is
scored 0-100 on the six criteria against a five-level scale. Any OpenAI-compatible model can
judge (the `judge` role, else `model`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, Field, field_validator

from hyperfolio.llm.errors import ModelCallError
from hyperfolio.llm.fence import Fence, with_evidence_rule
from hyperfolio.llm.protocols import StructuredChatModel
from hyperfolio.phrases import clip

STAGE = "judge"
CRITERIA = ("comprehensiveness", "empowerment", "relevance", "consistency", "clarity", "logical")
SELECTION = (*CRITERIA, "overall")
DESCRIPTIONS = {
    "comprehensiveness": "covers every aspect and detail the question asks about",
    "empowerment": "helps the reader understand the topic and reach an informed judgement",
    "relevance": "stays on what the question asks, without irrelevant material",
    "consistency": "agrees with itself and with the evidence it cites",
    "clarity": "is clearly worded and easy to follow",
    "logical": "argues in sound, well-ordered steps",
    "overall": "is the better answer all things considered",
}
LEVELS = "0-20 poor, 21-40 weak, 41-60 adequate, 61-80 good, 81-100 excellent"


def _winner(value: Any) -> int:
    text = str(value).strip().lower()
    if text in ("1", "answer 1", "first", "a"):
        return 1
    if text in ("2", "answer 2", "second", "b"):
        return 2
    try:
        return 1 if int(float(text)) == 1 else 2 if int(float(text)) == 2 else 0
    except ValueError:
        return 0


class Verdict(BaseModel):
    winner: int = Field(description="1 or 2")
    reason: str = ""

    @field_validator("winner", mode="before")
    @classmethod
    def _one_or_two(cls, value: Any) -> int:
        return _winner(value)


class SelectionReply(BaseModel):
    comprehensiveness: Verdict
    empowerment: Verdict
    relevance: Verdict
    consistency: Verdict
    clarity: Verdict
    logical: Verdict
    overall: Verdict


class ScoreReply(BaseModel):
    comprehensiveness: int = Field(ge=0, le=100)
    empowerment: int = Field(ge=0, le=100)
    relevance: int = Field(ge=0, le=100)
    consistency: int = Field(ge=0, le=100)
    clarity: int = Field(ge=0, le=100)
    logical: int = Field(ge=0, le=100)


SELECT_PROMPT = with_evidence_rule(
    "You compare two answers to the same question about a document collection. For each criterion "
    "decide which answer is better (1 or 2) and say why in one sentence:\n"
    + "\n".join(f"- {name}: the answer that {text}" for name, text in DESCRIPTIONS.items())
    + "\nJudge the answers only; their order means nothing. Reply in JSON with one object per criterion "
    '({"winner": 1 or 2, "reason": "..."}).'
)
SCORE_PROMPT = with_evidence_rule(
    "You grade an answer to a question about a document collection. Give a score from 0 to 100 for each "
    f"criterion, on this scale: {LEVELS}.\n"
    + "\n".join(f"- {name}: how well it {text}" for name, text in DESCRIPTIONS.items() if name != "overall")
    + "\nReply in JSON with one integer per criterion."
)


@dataclass
class PairJudgement:
    question: str
    first: str  # strategy whose answer was shown first in the first pass
    wins: dict[str, float] = field(default_factory=dict)  # criterion -> share won by strategy A (0, 0.5, 1)
    failed: int = 0


@dataclass
class JudgeReport:
    strategies: tuple[str, str]
    questions: int = 0
    judged: int = 0
    win_rate: dict[str, float] = field(default_factory=dict)  # criterion -> strategy A's win rate
    scores: dict[str, dict[str, float]] = field(default_factory=dict)  # strategy -> criterion -> mean score
    failures: int = 0
    pairs: list[PairJudgement] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, ensure_ascii=False)

    def markdown(self) -> str:
        a, b = self.strategies
        lines = [f"## LLM judge: {a} vs {b} ({self.judged} of {self.questions} questions judged)", ""]
        if self.win_rate:
            lines += ["| criterion | " + f"{a} wins | {b} wins |", "| --- | --- | --- |"]
            for name in SELECTION:
                if name in self.win_rate:
                    rate = self.win_rate[name]
                    lines.append(f"| {name} | {100 * rate:.1f}% | {100 * (1 - rate):.1f}% |")
        if self.scores:
            lines += ["", "| criterion | " + " | ".join(self.scores) + " |", "|---|" + "---|" * len(self.scores)]
            for name in CRITERIA:
                lines.append(f"| {name} | " + " | ".join(f"{s[name]:.1f}" for s in self.scores.values()) + " |")
        if self.failures:
            lines.append(f"\njudge calls that failed (left out): {self.failures}")
        return "\n".join(lines)


class Judge:
    def __init__(self, chat: StructuredChatModel, max_answer_chars: int = 4000, stage: str = STAGE) -> None:
        self.chat = chat
        self.max_answer_chars = max_answer_chars
        self.stage = stage

    def _select(self, question: str, one: str, two: str) -> SelectionReply | None:
        # The answers quote the documents (and may repeat what they tell a reader to do): fenced as evidence.
        one, two = clip(one, self.max_answer_chars), clip(two, self.max_answer_chars)
        fence = Fence.over([one, two])
        user = f"Question: {question}\n\nAnswer 1:\n{fence.quote(one, '1')}\n\nAnswer 2:\n{fence.quote(two, '2')}"
        messages = [{"role": "system", "content": SELECT_PROMPT}, {"role": "user", "content": user}]
        try:
            return self.chat.complete_json(messages, SelectionReply, stage=self.stage)
        except ModelCallError:
            return None

    def compare(self, question: str, answer_a: str, answer_b: str) -> PairJudgement:
        """Two passes, A first then B first; per criterion A's share of the wins (0, 0.5 or 1)."""
        result = PairJudgement(question, "A")
        passes = [(self._select(question, answer_a, answer_b), 1), (self._select(question, answer_b, answer_a), 2)]
        counted = [(reply, a_position) for reply, a_position in passes if reply is not None]
        result.failed = len(passes) - len(counted)
        for name in SELECTION:
            votes = [getattr(reply, name).winner for reply, _ in counted]
            a_wins = [
                1.0 if vote == a_position else 0.0
                for (_, a_position), vote in zip(counted, votes, strict=True)
                if vote in (1, 2)
            ]
            if a_wins:
                result.wins[name] = sum(a_wins) / len(a_wins)
        return result

    def score(self, question: str, answer: str) -> dict[str, float] | None:
        answer = clip(answer, self.max_answer_chars)
        user = f"Question: {question}\n\nAnswer:\n{Fence.over([answer]).quote(answer, 'answer')}"
        messages = [{"role": "system", "content": SCORE_PROMPT}, {"role": "user", "content": user}]
        try:
            reply = self.chat.complete_json(messages, ScoreReply, stage=self.stage)
        except ModelCallError:
            return None
        return {name: float(getattr(reply, name)) for name in CRITERIA}


def judge_answers(
    judge: Judge,
    strategies: tuple[str, str],
    items: Sequence[tuple[str, str, str]],
    scores: bool = False,
) -> JudgeReport:
    """`items`: (question, answer of strategy A, answer of strategy B)."""
    report = JudgeReport(strategies, questions=len(items))
    totals: dict[str, list[float]] = {name: [] for name in SELECTION}
    per_strategy: dict[str, dict[str, list[float]]] = {s: {c: [] for c in CRITERIA} for s in strategies}
    for question, answer_a, answer_b in items:
        pair = judge.compare(question, answer_a, answer_b)
        report.failures += pair.failed
        if pair.wins:
            report.judged += 1
            for name, share in pair.wins.items():
                totals[name].append(share)
        report.pairs.append(pair)
        if scores:
            for strategy, answer in zip(strategies, (answer_a, answer_b), strict=True):
                graded = judge.score(question, answer)
                if graded is None:
                    report.failures += 1
                    continue
                for name, value in graded.items():
                    per_strategy[strategy][name].append(value)
    report.win_rate = {name: sum(v) / len(v) for name, v in totals.items() if v}
    if scores:
        report.scores = {
            s: {c: (sum(v) / len(v) if v else 0.0) for c, v in crits.items()} for s, crits in per_strategy.items()
        }
    return report
