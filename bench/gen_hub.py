"""Generate a vault shaped like the Obsidian Hub's plugin catalogue, for benchmarks.

    python bench/gen_hub.py DIR [--notes 6500] [--seed 1]

Most notes are catalogue pages that repeat the same boilerplate (a badge line, an install
section, "community" and "plugin" everywhere, a Hub footer), so a common word matches
thousands of notes; plugin titles share stems ("Color", "Colored", "Colorful"), there are
people pages, themes, recipe-style guides and category maps of content, with the Hub's
frontmatter (``aliases``, ``tags: [type/plugin]``, ``publish``) and wikilinks between them
(plugin -> author, category -> plugins, guide -> plugins). Deterministic for a given seed.
The proportions follow the Hub: about 55% plugins, 20% people, 8% themes, 6% guides
and recipes, 5% categories, the rest community pages.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

STEMS = (
    "Color Colored Colorful Calendar Calendars Task Tasks Tasker Stopwatch Timer Timers Tag Tags "
    "Tagger Link Links Linker Note Notes Noter Folder Folders Table Tables Graph Graphs Canvas "
    "Kanban Outline Outliner Template Templates Templater Daily Periodic Review Reviewer Quick "
    "Quicker Sync Syncer Image Images Media Math Mermaid Code Coder Markdown Format Formatter "
    "Style Styles Styler Icon Icons Emoji Word Words Wordy Read Reader Reading Write Writer "
    "Writing Focus Focused Zen Sidebar Tab Tabs Pane Panes Search Searcher Query Dataview Data "
    "Map Maps Mind Slide Slides Audio Voice Chart Charts Git Backup Export Exporter Import "
    "Importer Publish Share Copy Paste Clip Clipper Web Book Books Quote Quotes Journal Habit "
    "Habits Project Projects Todo Todoist Zotero Citation Citations Spaced Flash Flashcards"
).split()
SUFFIXES = ("", "Plus", "Helper", "Picker", "Manager", "View", "Panel", "Toolkit", "Tools", "Pro",
            "Lite", "Bar", "Mode", "Assistant", "Switcher", "Navigator", "Highlighter", "Counter",
            "Tracker", "Viewer", "Builder", "Companion", "Suggester", "Extended", "Enhancer")
FIRST = ("Alex Sam Jamie Chris Taylor Jordan Morgan Robin Kim Lee Noa Yuki Aiko Lars Sven Ines Ana "
         "Marta Pablo Luca Giulia Pierre Claire Hans Greta Omar Leila Ravi Priya Chen Wei Mei Ivan "
         "Olga Tomas Eva Nina Felix Hugo Lena Max Paul Sara Tim Zoe").split()
LAST = ("Smith Garcia Muller Rossi Dubois Tanaka Kim Chen Ivanov Novak Silva Costa Jensen Berg Fischer "
        "Weber Wagner Becker Schulz Hoffmann Klein Wolf Neumann Braun Zimmer Hartmann Lange Krause "
        "Werner Meier Lehmann Schmitt").split()
CATEGORIES = ("Appearance", "Editing", "Files", "Links", "Tasks", "Calendars", "Tables", "Images",
              "Publishing", "Sync", "Templates", "Search", "Navigation", "Writing", "Reading",
              "Research", "Code", "Math", "Export", "Import", "Review", "Graph", "Dataview",
              "Productivity", "Journaling", "Study", "Canvas", "Mobile")
WORDS = (
    "note notes vault file files folder link links heading block embed pane sidebar setting settings "
    "command palette hotkey shortcut editor preview reading mode source live markdown syntax render "
    "frontmatter property properties yaml tag tags search query filter sort table list checkbox task "
    "calendar daily weekly periodic template snippet css theme dark light accent font icon color "
    "image audio video pdf canvas graph local global backlink outgoing unlinked mention alias "
    "workflow habit project review inbox archive sync backup mobile desktop release version update "
    "support issue request feature option toggle format export import publish share clipboard "
    "timer stopwatch pomodoro focus writing reading research citation zotero flashcard spaced "
    "repetition outline kanban board card column mermaid math latex code highlight language"
).split()
BADGES = ("![GitHub stars](https://img.shields.io/github/stars/{repo}?style=flat) "
          "![Downloads](https://img.shields.io/github/downloads/{repo}/total) "
          "![Release](https://img.shields.io/github/v/release/{repo})")
FOOTER = (
    "%% Hub footer: Please don't edit anything below this line %%\n\n"
    "# This note in GitHub\n\n"
    "<span class=\"git-footer\">[Edit In GitHub](https://github.dev/obsidian-community/obsidian-hub/"
    "blob/main/{path}) | [Copy this note](https://raw.githubusercontent.com/obsidian-community/"
    "obsidian-hub/main/{path}) | [Download this vault](https://github.com/obsidian-community/"
    "obsidian-hub/archive/refs/heads/main.zip) </span>\n"
)
PLUGINS = "02 - Community Expansions/02.05 All Community Expansions/Plugins"
THEMES = "02 - Community Expansions/02.05 All Community Expansions/Themes"
CATEGORY_DIR = "02 - Community Expansions/02.01 Plugins by Category"
PEOPLE = "01 - Community/People"
GUIDES = "04 - Guides, Workflows, & Courses"
COMMUNITY = "01 - Community"


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def sentence(rng: random.Random) -> str:
    return words(rng, rng.randint(7, 15)).capitalize() + "."


def paragraph(rng: random.Random, sentences: tuple[int, int] = (2, 4)) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(*sentences)))


def frontmatter(tags: list[str], aliases: list[str] | None = None, extra: dict[str, str] | None = None) -> str:
    lines = ["---", "aliases:" + ("" if aliases else " []")]
    lines += [f"- {a}" for a in aliases or []]
    lines += ["tags:"] + [f"- {t}" for t in tags]
    for key, value in (extra or {}).items():
        lines.append(f"{key}: {value}")
    lines += ["publish: true", "---", ""]
    return "\n".join(lines)


def plugin_titles(rng: random.Random, count: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        stem = rng.choice(STEMS)
        second = rng.choice(STEMS) if rng.random() < 0.35 else ""
        title = " ".join(w for w in (stem, second, rng.choice(SUFFIXES)) if w)
        if title in seen:
            title = f"{title} {len(out)}"
        seen.add(title)
        out.append(title)
    return out


def person_names(rng: random.Random, count: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        name = name if name not in seen else f"{rng.choice(FIRST)}{rng.choice(LAST)}{len(out)}"
        seen.add(name)
        out.append(name)
    return out


def plugin_note(rng: random.Random, title: str, author: str, related: list[str], path: str) -> str:
    repo = f"{author.replace(' ', '').lower()}/obsidian-{title.replace(' ', '-').lower()}"
    plugin_id = title.replace(" ", "-").lower()
    category = rng.choice(CATEGORIES)
    body = [
        frontmatter(["type/plugin", f"plugin/{category.lower()}"], extra={"cssclass": "", "permalink": ""}),
        f"# {title}", "",
        BADGES.format(repo=repo), "",
        "## Description", "",
        f"This community plugin {sentence(rng).lower()} {paragraph(rng)}", "",
        "## Install", "",
        f"Install {title} from the community plugins browser: open Settings, Community plugins, "
        "turn off restricted mode, Browse, search for the plugin and select Install, then Enable.", "",
        f"- Obsidian: [Install](obsidian://show-plugin?id={plugin_id})",
        f"- GitHub: [{repo}](https://github.com/{repo})",
        f"- Author: [[{author}]]", "",
    ]
    if rng.random() < 0.5:
        body += ["## Usage", "", paragraph(rng, (3, 6)), ""]
    if rng.random() < 0.2:
        body += ["```dataview", f"TABLE file.mtime FROM #plugin/{category.lower()}", "```", ""]
    body += ["## Related", "", "%% Add links to related plugins, themes, and notes here %%", ""]
    body += [f"- [[{r}]]" for r in related] + ["", FOOTER.format(path=path)]
    return "\n".join(body)


def theme_note(rng: random.Random, title: str, author: str, path: str) -> str:
    return "\n".join([
        frontmatter(["type/theme"], extra={"modes": "[dark, light]"}),
        f"# {title}", "", f"Author: [[{author}]]", "",
        "## Description", "", f"A community theme. {paragraph(rng)}", "",
        "## Install", "", "Settings, Appearance, Themes, Manage, search for the theme, Install and use.", "",
        "## Screenshot", "", f"![{title}](https://raw.githubusercontent.com/{author.replace(' ', '')}/"
        f"{title.replace(' ', '-')}/main/screenshot.png)", "",
        FOOTER.format(path=path),
    ])


def person_note(rng: random.Random, name: str, made: list[str], path: str) -> str:
    handle = name.replace(" ", "").lower()
    lines = [frontmatter(["type/person"], extra={"github": handle}), f"# {name}", "",
             f"- GitHub: [{handle}](https://github.com/{handle})", ""]
    if made:
        lines += ["## Plugins", ""] + [f"- [[{p}]]" for p in made] + [""]
    if rng.random() < 0.3:
        lines += ["## Bio", "", paragraph(rng), ""]
    lines += ["%% Add a short bio, links to your work and the community spaces you take part in %%", "",
              FOOTER.format(path=path)]
    return "\n".join(lines)


def guide_note(rng: random.Random, title: str, plugins: list[str], path: str) -> str:
    lines = [frontmatter(["type/resource", "topic/workflow"]), f"# {title}", "", paragraph(rng, (3, 5)), ""]
    for step in range(rng.randint(2, 5)):
        lines += [f"## Step {step + 1}", "", paragraph(rng), ""]
        if rng.random() < 0.3:
            lines += ["```js", f"const {rng.choice(WORDS)} = app.vault.getMarkdownFiles();", "```", ""]
    lines += ["## Plugins used", ""] + [f"- [[{p}]]" for p in plugins] + ["", FOOTER.format(path=path)]
    return "\n".join(lines)


def category_note(title: str, plugins: list[str], path: str) -> str:
    lines = [frontmatter(["type/moc"]), f"# {title}", "",
             "%% Add a description below this line. It doesn't need to be long: one or two sentences "
             "should be a good start. %%", "", "## Plugins in this category", ""]
    lines += [f"- [[{p}]]" for p in plugins] + ["", FOOTER.format(path=path)]
    return "\n".join(lines)


def community_note(rng: random.Random, title: str, path: str) -> str:
    return "\n".join([frontmatter(["type/resource", "topic/community"]), f"# {title}", "",
                      f"The Obsidian community {sentence(rng).lower()} {paragraph(rng, (3, 6))}", "",
                      FOOTER.format(path=path)])


def generate(root: Path, notes: int = 6500, seed: int = 1) -> None:
    rng = random.Random(seed)
    n_plugins, n_people, n_themes = int(notes * 0.55), int(notes * 0.20), int(notes * 0.08)
    n_guides, n_categories = int(notes * 0.06), int(notes * 0.05)
    n_community = notes - n_plugins - n_people - n_themes - n_guides - n_categories
    plugins = plugin_titles(rng, n_plugins)
    people = person_names(rng, n_people)
    authors = [rng.choice(people) for _ in plugins]
    made: dict[str, list[str]] = {}
    for plugin, author in zip(plugins, authors, strict=True):
        made.setdefault(author, []).append(plugin)

    def write(folder: str, title: str, text: str) -> None:
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / f"{title}.md").write_text(text, encoding="utf-8")

    for title, author in zip(plugins, authors, strict=True):
        write(PLUGINS, title, plugin_note(rng, title, author, rng.sample(plugins, rng.randint(0, 3)),
                                          f"{PLUGINS}/{title}.md"))
    for name in people:
        write(PEOPLE, name, person_note(rng, name, made.get(name, []), f"{PEOPLE}/{name}.md"))
    for i in range(n_themes):
        title = f"{rng.choice(STEMS)} {rng.choice(('Theme', 'Dark', 'Light', 'Minimal', 'Nord', 'Things'))} {i}"
        write(THEMES, title, theme_note(rng, title, rng.choice(people), f"{THEMES}/{title}.md"))
    for i in range(n_guides):
        kind = rng.choice(("Recipe", "Workflow", "Guide", "How to"))
        title = f"{kind} - {words(rng, 3).capitalize()} {i}"
        folder = f"{GUIDES}/{'Recipes' if kind == 'Recipe' else 'Workflows'}"
        write(folder, title, guide_note(rng, title, rng.sample(plugins, rng.randint(1, 6)), f"{folder}/{title}.md"))
    for i in range(n_categories):
        title = f"{CATEGORIES[i % len(CATEGORIES)]} plugins {i // len(CATEGORIES) + 1}"
        write(CATEGORY_DIR, title, category_note(title, rng.sample(plugins, rng.randint(5, 40)),
                                                 f"{CATEGORY_DIR}/{title}.md"))
    for i in range(n_community):
        title = f"{rng.choice(('Community', 'Event', 'Meetup', 'Talk', 'Contributing'))} {words(rng, 2)} {i}"
        write(COMMUNITY, title, community_note(rng, title, f"{COMMUNITY}/{title}.md"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--notes", type=int, default=6500)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    generate(args.dir, args.notes, args.seed)
    print(f"generated {args.notes} hub-shaped notes in {args.dir}")


if __name__ == "__main__":
    main()
