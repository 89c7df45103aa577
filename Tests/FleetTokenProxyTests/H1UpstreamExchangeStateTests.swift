import XCTest
@testable import FleetTokenProxy

/// Every transition of the HTTP/1.1 upstream exchange's machine, legal and illegal (bound of
/// untaken answer bytes: 100).
final class H1UpstreamExchangeStateTests: XCTestCase {
    typealias State = H1UpstreamExchangeState

    private func lent(held: Int, whole: Bool, declared: Int?) -> State {
        var state = State(responseBound: 100)
        _ = state.connectionLent(held: held, whole: whole, declaredLength: declared)
        return state
    }

    // MARK: The connection

    func testAWholeBodyGoesWithTheHeadByItsLength() {
        var state = State(responseBound: 100)
        XCTAssertEqual(state.connectionLent(held: 7, whole: true, declaredLength: 7),
                       .sendHead(.contentLength(7), holdLastByte: false, pumpBody: false))
        XCTAssertTrue(state.requestFullySent)
        XCTAssertFalse(state.wantsBody)
    }

    func testABodilessRequestHasNoFramingUnlessItDeclaredOne() {
        var none = State(responseBound: 100)
        XCTAssertEqual(none.connectionLent(held: 0, whole: true, declaredLength: nil), .sendHead(.none, holdLastByte: false, pumpBody: false))
        var zero = State(responseBound: 100)
        XCTAssertEqual(zero.connectionLent(held: 0, whole: true, declaredLength: 0),
                       .sendHead(.contentLength(0), holdLastByte: false, pumpBody: false))
    }

    func testABodyStillArrivingStreamsByItsDeclaredLengthOrChunked() {
        var declared = State(responseBound: 100)
        XCTAssertEqual(declared.connectionLent(held: 10, whole: false, declaredLength: 100_000),
                       .sendHead(.contentLength(100_000), holdLastByte: false, pumpBody: true))
        XCTAssertTrue(declared.wantsBody)
        XCTAssertFalse(declared.requestFullySent)
        var unknown = State(responseBound: 100)
        XCTAssertEqual(unknown.connectionLent(held: 10, whole: false, declaredLength: nil), .sendHead(.chunked, holdLastByte: false, pumpBody: true))
    }

    /// docs/CONTRACT.md §6: all the declared bytes are there but the end is not: the head's
    /// (or body's) last byte waits, so the upstream never holds a request it could read whole.
    func testAllDeclaredBytesWithoutTheEndHoldTheLastByteBack() {
        var state = State(responseBound: 100)
        XCTAssertEqual(state.connectionLent(held: 5, whole: false, declaredLength: 5), .sendHead(.contentLength(5), holdLastByte: true, pumpBody: true))
        XCTAssertNil(state.bodyPulled(count: 0, end: false))
        XCTAssertEqual(state.bodyPulled(count: 0, end: true), .sendHeldByte)
        XCTAssertTrue(state.requestFullySent)
    }

    func testAHeldBodyLongerThanItsDeclaredLengthIsRefused() {
        var state = State(responseBound: 100)
        XCTAssertEqual(state.connectionLent(held: 9, whole: true, declaredLength: 5),
                       .refuse(.malformedRequest("the request body is not as long as its content-length")))
        XCTAssertEqual(state.phase, .ended)
        var partial = State(responseBound: 100)
        XCTAssertEqual(partial.connectionLent(held: 9, whole: false, declaredLength: 5),
                       .refuse(.malformedRequest("the request body is longer than its content-length")))
    }

    func testNoConnectionIsReportedOnce() {
        var state = State(responseBound: 100)
        XCTAssertEqual(state.noConnection(), .reportFailure)
        XCTAssertNil(state.noConnection())
        XCTAssertEqual(state.connectionLent(held: 0, whole: true, declaredLength: nil), .giveBack, "a late connection goes back")
    }

    func testCancellingWhileWaitingCancelsTheTicketAndAConnectionLentLaterGoesBack() {
        var state = State(responseBound: 100)
        XCTAssertEqual(state.cancelled(), .cancelTicket)
        XCTAssertNil(state.cancelled())
        XCTAssertEqual(state.connectionLent(held: 0, whole: true, declaredLength: nil), .giveBack)
    }

    func testCancellingAnExchangeDiscardsItsConnection() {
        var state = lent(held: 0, whole: true, declared: nil)
        XCTAssertEqual(state.cancelled(), .discardConnection)
        XCTAssertEqual(state.phase, .ended)
    }

    // MARK: The request body

    func testADeclaredBodyIsSentAsItComesAndItsLastByteWaitsForTheEnd() {
        var state = lent(held: 0, whole: false, declared: 10)
        XCTAssertEqual(state.bodyPulled(count: 4, end: false), .send(count: 4, holdingLastByte: false))
        XCTAssertEqual(state.bodyPulled(count: 6, end: false), .send(count: 5, holdingLastByte: true), "all there, no end yet")
        XCTAssertFalse(state.requestFullySent)
        XCTAssertEqual(state.bodyPulled(count: 0, end: true), .sendHeldByte)
        XCTAssertTrue(state.requestFullySent)
        XCTAssertNil(state.bodyPulled(count: 0, end: true), "the request is whole")
    }

    func testADeclaredBodyEndingWithItsLastBytesSendsThemAll() {
        var state = lent(held: 0, whole: false, declared: 10)
        XCTAssertEqual(state.bodyPulled(count: 10, end: true), .send(count: 10, holdingLastByte: false))
        XCTAssertTrue(state.requestFullySent)
    }

    func testABodyLongerOrShorterThanDeclaredBreaksTheExchange() {
        let failure = ProxyFailure.malformedRequest("the request body is not as long as its content-length")
        var longer = lent(held: 0, whole: false, declared: 10)
        XCTAssertEqual(longer.bodyPulled(count: 11, end: false), .broke(failure))
        XCTAssertEqual(longer.phase, .ended)
        var shorter = lent(held: 0, whole: false, declared: 10)
        XCTAssertEqual(shorter.bodyPulled(count: 9, end: true), .broke(failure))
        var past = lent(held: 0, whole: false, declared: 10)
        _ = past.bodyPulled(count: 10, end: false)
        XCTAssertEqual(past.bodyPulled(count: 1, end: false), .broke(failure), "a byte past a held last byte")
    }

    func testAnUnknownLengthGoesInChunksAndEndsWithTheLastChunk() {
        var state = lent(held: 0, whole: false, declared: nil)
        XCTAssertEqual(state.bodyPulled(count: 3, end: false), .sendChunk(count: 3, last: false))
        XCTAssertNil(state.bodyPulled(count: 0, end: false))
        XCTAssertEqual(state.bodyPulled(count: 0, end: true), .sendChunk(count: 0, last: true))
        XCTAssertTrue(state.requestFullySent)
    }

    // MARK: The answer

    func testAnAnswerWithABodyIsReportedAndItsBytesPauseReadingPastTheBound() {
        var state = lent(held: 0, whole: true, declared: nil)
        XCTAssertEqual(state.answerHead(bodiless: false), .reportHead)
        XCTAssertNil(state.answerHead(bodiless: false), "one head")
        XCTAssertNil(state.answerBytes(100))
        XCTAssertEqual(state.answerBytes(1), .pauseReading)
        XCTAssertNil(state.answerBytes(50), "paused once")
        XCTAssertNil(state.answerTaken(50), "151 delivered, 50 taken: still over")
        XCTAssertEqual(state.answerTaken(1), .resumeReading)
        XCTAssertNil(state.answerTaken(10))
        XCTAssertEqual(state.answerEnded(), .reportEnd(withHeldHead: false))
        XCTAssertNil(state.answerEnded())
        XCTAssertNil(state.cancelled(), "its connection is back in the pool")
    }

    func testABodilessAnswersHeadWaitsForItsEnd() {
        var state = lent(held: 0, whole: true, declared: nil)
        XCTAssertEqual(state.answerHead(bodiless: true), .holdHead)
        XCTAssertNil(state.answerBytes(5))
        XCTAssertEqual(state.answerEnded(), .reportEnd(withHeldHead: true))
    }

    func testABrokenConnectionIsLostOnlyInTheKeepAliveRace() {
        var race = lent(held: 0, whole: true, declared: nil)
        XCTAssertEqual(race.connectionBroke(retryable: true), .reportBreak(lost: true))
        XCTAssertNil(race.connectionBroke(retryable: true))
        var other = lent(held: 0, whole: true, declared: nil)
        _ = other.answerHead(bodiless: false)
        XCTAssertEqual(other.connectionBroke(retryable: false), .reportBreak(lost: false))
        XCTAssertNil(other.answerEnded())
    }

    func testIllegalEventsWhileWaitingChangeNothing() {
        var state = State(responseBound: 100)
        let before = state
        XCTAssertNil(state.bodyPulled(count: 1, end: true))
        XCTAssertNil(state.answerHead(bodiless: false))
        XCTAssertNil(state.answerBytes(1))
        XCTAssertNil(state.answerTaken(1))
        XCTAssertNil(state.answerEnded())
        XCTAssertNil(state.connectionBroke(retryable: true))
        XCTAssertEqual(state, before)
        XCTAssertFalse(state.wantsBody)
        XCTAssertTrue(state.requestFullySent)
    }
}
