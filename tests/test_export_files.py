"""Pages, slide shows and the claims report never write over a file someone else wrote or changed: a file
that is not xaikit's own unchanged export is copied aside first, and the copy is named."""

from __future__ import annotations

from pathlib import Path

from xaikit._files import write_export, written_by_xaikit


def _backups(folder: Path) -> list[Path]:
    return sorted(folder.glob("backup-*"))


def test_a_users_file_is_kept_before_an_export_takes_its_name(tmp_path, capsys):
    mine = tmp_path / "02_integrated_gradients.slides.html"
    mine.write_text("my own slides\n")
    write_export(mine, "<html>xaikit's</html>", "slide show")
    (kept,) = _backups(tmp_path)
    assert kept.read_text() == "my own slides\n"
    assert kept.name in capsys.readouterr().err
    assert written_by_xaikit(mine) and "xaikit's" in mine.read_text()


def test_xaikits_own_unchanged_export_is_replaced_without_a_copy(tmp_path):
    page = tmp_path / "01.html"
    write_export(page, "<html>first</html>")
    write_export(page, "<html>second</html>")
    assert _backups(tmp_path) == [] and "second" in page.read_text()


def test_an_export_edited_by_hand_is_kept(tmp_path):
    page = tmp_path / "01.html"
    write_export(page, "<html>first</html>")
    page.write_text(page.read_text().replace("first", "first, with my notes"))
    assert not written_by_xaikit(page)
    write_export(page, "<html>second</html>")
    (kept,) = _backups(tmp_path)
    assert "my notes" in kept.read_text()


def test_the_claims_report_keeps_a_file_it_did_not_write(tmp_path):
    from xaikit.course.claims import report

    mine = tmp_path / "c.html"
    mine.write_text("MY\n")
    report.write(mine, ["02"])
    (kept,) = _backups(tmp_path)
    assert kept.read_text() == "MY\n" and "Claims ledger" in mine.read_text()


def test_the_page_and_slide_exporters_write_through_write_export():
    import inspect

    from xaikit.course import notebooks, pages

    assert "write_export(" in inspect.getsource(notebooks.export_html)
    assert "write_export(" in inspect.getsource(pages.export_slides)
