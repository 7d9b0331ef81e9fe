// A module of its own only for its import path: Go initialises packages in
// import-path order (among those whose imports are ready), and this path
// sorts before fyne.io/..., so its init runs before the UI toolkit's. See
// uilocale.go.
module boot.strata.dev/uilocale

go 1.26.8
