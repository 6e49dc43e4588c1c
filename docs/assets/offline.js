// Opened from disk (file://), the browser will not start Material's
// search worker, and Material hides the search box. Say why where the
// box would be, and how to get it back, instead of losing it silently.
if (window.location.protocol === "file:") {
  const explain = () => {
    const header = document.querySelector(".md-header__inner");
    if (!header || header.querySelector(".lesson-offline-search")) return;
    const note = document.createElement("p");
    note.className = "lesson-offline-search";
    note.setAttribute("role", "note");
    // The header's colours and size, so the note fits where search was.
    note.style.cssText =
      "margin:0 0.6rem;font-size:0.6rem;line-height:1.3;max-width:16rem";
    note.innerHTML =
      "Search needs a web server: run " +
      "<code>python3 -m http.server</code> in the site folder.";
    header.appendChild(note);
  };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", explain);
  } else {
    explain();
  }
}
