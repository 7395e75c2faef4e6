// Every error the lab sends is made here: a status, a dotted type and the figures that explain it. Import
// them from this module; which file holds which concern, and where a new factory goes: README.md.
export * from './lab-error.js'
export * from './body.js'
export * from './capacity.js'
export * from './http.js'
export * from './services.js'
export * from './catalogue.js'
