// Opened from disk (file://), runs before Material's bundle
// (overrides/main.html) and fixes what Material does there:
//
// - Material turns instant navigation off in a way that completes its
//   document$ before the page is ready, so none of its components mount
//   (sidebar heights: the sidebar then covers previous/next). Dropping the
//   feature from the config before the bundle reads it fixes that.
// - Search cannot run: the browser will not start its worker from disk,
//   and the index script does not exist. Material would hide the box (and
//   fail loading the index); we put a note in its place saying why and
//   how to get search back.
if (window.location.protocol === "file:") {
  const config = document.getElementById("__config");
  if (config) {
    const settings = JSON.parse(config.textContent);
    settings.features = settings.features.filter(
      (feature) => feature !== "navigation.instant",
    );
    config.textContent = JSON.stringify(settings);
  }
  const search = document.querySelector(".md-search");
  if (search) {
    const note = document.createElement("p");
    note.className = "lesson-offline-search";
    note.setAttribute("role", "note");
    // The header's colours and size, so the note fits where search was.
    note.style.cssText =
      "margin:0 0.6rem;font-size:0.6rem;line-height:1.3;max-width:16rem";
    note.innerHTML =
      "Search needs a web server: run " +
      "<code>python3 -m http.server</code> in the site folder.";
    search.replaceWith(note);
  }
  for (const button of document.querySelectorAll('label[for="__search"]')) {
    button.remove();
  }
}
