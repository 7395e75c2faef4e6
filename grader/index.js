/**
 * The grader's public door, what `npm run grade` (scripts/grade.js) uses:
 * grade a handler, a service or a class, read the card as text, JSON or
 * JUnit, hold it to a baseline card, build a class's table from cards (and
 * grade some of them again), and write its report. grader/README.md lists the folders behind it.
 */
export { AREAS } from './checks/index.js'
export { normalizeSeed } from './checks/settings.js'
export { grade } from './run/grade-handler.js'
export { gradeService } from './run/grade-service.js'
export { classifyUrl, remoteRefusal } from './service/service-url.js'
export { formatCard } from './card/card.js'
export { cardJson, cardTable } from './card/card-json.js'
export { writeGradeReport } from './card/report.js'
export { saveCardRecord } from './card/card-record.js'
export { classPlaceProblem, gradeClass } from './card/class.js'
export { htmlBeside, verdictSummary } from './card/class-table.js'
export { countVerdicts } from './card/class-rows.js'
export { terminalText } from '../lib/util/escape.js'
export { junitXml } from './card/junit.js'
export { AREA_POINTS, appendClassroomOutput, classroomError, classroomResults, pointsLine } from './card/classroom.js'
export { baselineLines, baselineRefusal, compareWithBaseline, DEFAULT_TOLERANCE, parseTolerance, readBaseline } from './card/baseline.js'
export { collectClass } from './card/collect.js'
export { parseVerify, verifyLine } from './card/verify.js'
export { classLines, progressPrinter } from './card/progress.js'
export { labVersion } from './student/lab-version.js'
