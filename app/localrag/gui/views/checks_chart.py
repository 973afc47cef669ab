"""The history of test-question runs as a small line chart, drawn with QPainter (no chart library in the
bundle): one line per measure — found at rank 1, within 5, within 10, quoted from the page — as a share of the
questions, one point per run, oldest on the left. A run whose settings, models or library differ from the
run before is marked under its point; hovering a point names the run, its totals and what changed."""

from __future__ import annotations

from dataclasses import dataclass

from localrag.core.checks.results import CheckRun, what_changed
from localrag.gui.qt import QtCore, QtGui, QtWidgets

# Each line: its name in the legend, the measure (a rank, or None for quoted from the page) and its colour.
SERIES = (
    ("rank 1", 1, "#2563eb"),
    ("top 5", 5, "#0891b2"),
    ("top 10", 10, "#16a34a"),
    ("quoted", None, "#d97706"),
)
# The runs shown (the latest).
SHOWN_RUNS = 20


@dataclass
class _Point:
    run: CheckRun
    changed: list[str]
    x: float


class RunsChart(QtWidgets.QWidget):
    """The runs' shares over time. ``set_runs(runs)`` with the runs oldest first."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("checks-chart")
        self.setAccessibleName("History of runs")
        self.setMinimumSize(340, 150)
        self.setMouseTracking(True)
        self.points: list[_Point] = []

    def set_runs(self, runs: list[CheckRun]) -> None:
        shown = runs[-SHOWN_RUNS:]
        before = runs[-len(shown) - 1] if len(runs) > len(shown) else None
        self.points = []
        for run in shown:
            self.points.append(_Point(run, what_changed(before, run), 0.0))
            before = run
        self.setAccessibleDescription(self.describe())
        self.update()

    def describe(self) -> str:
        """The chart in words (its accessible description, and the tooltip's lines)."""
        if not self.points:
            return "No runs yet."
        last = self.points[-1]
        return f"{len(self.points)} runs; the last: {last.run.totals()}"

    # -- drawing ---------------------------------------------------------------------------------------------

    def _plot_rect(self) -> QtCore.QRectF:
        fm = self.fontMetrics()
        left = fm.horizontalAdvance("100%") + 10
        top = fm.height() + 12  # the legend
        bottom = fm.height() + 10  # the run numbers
        width, height = max(10, self.width() - left - 14), max(10, self.height() - top - bottom)
        return QtCore.QRectF(left, top, width, height)

    def paintEvent(self, _event: QtGui.QPaintEvent) -> None:  # noqa: N802 (Qt override)
        p = QtGui.QPainter(self)
        p.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        pal = self.palette()
        text = pal.color(QtGui.QPalette.ColorRole.WindowText)
        muted = QtGui.QColor(text)
        muted.setAlpha(120)
        grid = QtGui.QColor(text)
        grid.setAlpha(40)
        fm = self.fontMetrics()
        rect = self._plot_rect()
        # The legend.
        x = rect.left()
        for name, _k, colour in SERIES:
            p.setPen(QtGui.QPen(QtGui.QColor(colour), 3))
            y = fm.height() / 2 + 4
            p.drawLine(QtCore.QPointF(x, y), QtCore.QPointF(x + 14, y))
            p.setPen(text)
            p.drawText(QtCore.QPointF(x + 18, y + fm.ascent() / 2 - 1), name)
            x += 30 + fm.horizontalAdvance(name)
        # The grid: 0, 50 and 100 %.
        for share in (0.0, 0.5, 1.0):
            y = rect.bottom() - share * rect.height()
            p.setPen(QtGui.QPen(grid, 1))
            p.drawLine(QtCore.QPointF(rect.left(), y), QtCore.QPointF(rect.right(), y))
            p.setPen(muted)
            label = f"{round(share * 100)}%"
            at = QtCore.QPointF(rect.left() - fm.horizontalAdvance(label) - 6, y + fm.ascent() / 2)
            p.drawText(at, label)
        if not self.points:
            p.setPen(muted)
            p.drawText(rect, QtCore.Qt.AlignmentFlag.AlignCenter, "No runs yet: Run checks them all.")
            p.end()
            return
        n = len(self.points)
        step = rect.width() / max(1, n - 1) if n > 1 else 0.0
        for i, point in enumerate(self.points):
            point.x = rect.left() + (i * step if n > 1 else rect.width() / 2)
        # A run that changed something: a dashed line under its point, and its number in bold.
        for point in self.points:
            if point.changed:
                p.setPen(QtGui.QPen(muted, 1, QtCore.Qt.PenStyle.DashLine))
                p.drawLine(QtCore.QPointF(point.x, rect.top()), QtCore.QPointF(point.x, rect.bottom()))
        for _name, k, colour in SERIES:
            pen = QtGui.QPen(QtGui.QColor(colour), 2)
            p.setPen(pen)
            p.setBrush(QtGui.QColor(colour))
            path = QtGui.QPainterPath()
            for i, point in enumerate(self.points):
                y = rect.bottom() - point.run.share(k) * rect.height()
                if i == 0:
                    path.moveTo(point.x, y)
                else:
                    path.lineTo(point.x, y)
            p.setBrush(QtCore.Qt.BrushStyle.NoBrush)
            p.drawPath(path)
            p.setBrush(QtGui.QColor(colour))
            for point in self.points:
                y = rect.bottom() - point.run.share(k) * rect.height()
                p.drawEllipse(QtCore.QPointF(point.x, y), 3.0, 3.0)
        # The run numbers under the axis.
        bold = QtGui.QFont(self.font())
        bold.setBold(True)
        every = max(1, int(fm.horizontalAdvance("0000") * 1.5 / max(1.0, step))) if n > 1 else 1
        for i, point in enumerate(self.points):
            if i % every and i != n - 1:
                continue
            label = f"#{point.run.id}" if point.run.id is not None else str(i + 1)
            p.setFont(bold if point.changed else self.font())
            p.setPen(text if point.changed else muted)
            w = fm.horizontalAdvance(label)
            p.drawText(QtCore.QPointF(point.x - w / 2, rect.bottom() + fm.ascent() + 4), label)
        p.end()

    # -- hovering --------------------------------------------------------------------------------------------

    def point_at(self, x: float) -> _Point | None:
        """The run nearest to ``x`` (within 12 pixels)."""
        best = min(self.points, key=lambda pt: abs(pt.x - x), default=None)
        return best if best is not None and abs(best.x - x) <= 12 else None

    def tooltip(self, point: _Point) -> str:
        run = point.run
        when = run.started_at.astimezone().strftime("%Y-%m-%d %H:%M")
        lines = [
            f"Run #{run.id} · {when}",
            run.totals(),
            f"Embedding model: {run.embedding_model} · language model: {run.llm_model}",
            f"Library: {run.library()}",
            "Changed: " + ("; ".join(point.changed) if point.changed else "nothing since the run before"),
        ]
        return "\n".join(lines)

    def mouseMoveEvent(self, event: QtGui.QMouseEvent) -> None:  # noqa: N802 (Qt override)
        point = self.point_at(event.position().x())
        if point is None:
            QtWidgets.QToolTip.hideText()
        else:
            QtWidgets.QToolTip.showText(event.globalPosition().toPoint(), self.tooltip(point), self)
        super().mouseMoveEvent(event)
